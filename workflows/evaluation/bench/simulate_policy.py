"""Does the strategy bandit learn? A simulation over real retrieval outcomes.

1. Reward table, computed once and cached: for every question of the mix and every arm, the
   arm's plan runs through the real skills (RetrievalPlanner, the offline planner the pipeline
   uses; every arm ends with the rerank skill); reward = 1 when a gold doc is among the first 5
   distinct docs of the reranked evidence, else 0 (the rank is kept too, for a graded MRR@5
   variant). KBs: the demo shop and each dev set of DATASET_CAPS over only the documents whose
   chunks the shared embedding cache already holds (nothing is embedded here but questions).
2. Simulation: a shuffled stream of those questions (every question once per epoch, new order
   each epoch), played by: the rules alone; LinUCB starting from the rules (one per KB, as each
   KB keeps its own experience store), learning from each reward; Thompson sampling on the same
   model; the best fixed arm per (KB, intent) in hindsight (the oracle); a uniformly random
   arm. Several seeds.
3. Held-out check: a bandit trained on a stream of one half of the questions (alternating
   within each KB and intent) chooses greedily (alpha = 0) for the other half, and vice versa.

Run: `python run.py bench simulate --rounds 3000 --seed 0` (writes docs/strategy_learning.png).
The reward table (1.) is built by reward_table.py; this module plays it (2., 3.) and reports.
"""

from __future__ import annotations

import random
import sys
import zlib
from collections import defaultdict
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np

from citescope.agents.arms import Arm
from citescope.agents.policy import Rule, RulesPolicy
from citescope.workflows.bandit import LinearThompsonPolicy, LinUCBPolicy
from citescope.workflows.evaluation.bench.reward_table import REPO, RewardRow, build_reward_table, simulation_sources

DEFAULT_PLOT = REPO / "docs" / "strategy_learning.png"
POLICIES = ("rules", "bandit", "thompson", "oracle_per_intent", "random")
_NAMES = {
    "rules": "rules only",
    "bandit": "LinUCB, warm start from the rules",
    "thompson": "Thompson sampling, same model",
    "oracle_per_intent": "best fixed arm per (KB, intent), hindsight",
    "random": "uniform random arm",
}


# ----------------------------------------------------------------------------- simulation


def _stream(n_rows: int, rounds: int, rng: random.Random) -> list[int]:
    """Row indices: shuffled epochs (every question once per epoch), cut to `rounds`."""
    order: list[int] = []
    while len(order) < rounds:
        epoch = list(range(n_rows))
        rng.shuffle(epoch)
        order += epoch
    return order[:rounds]


def _value(row: RewardRow, arm: str) -> float:
    value = row.rewards.get(arm)
    return 0.0 if value is None else value


def best_fixed_arms(rows: Sequence[RewardRow], arms: Sequence[str]) -> dict[tuple[str, str], str]:
    """The best single arm for each (KB, intent) over these rows (ties: arms-file order)."""
    totals: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: dict.fromkeys(arms, 0.0))
    for row in rows:
        for arm in arms:
            totals[row.group][arm] += _value(row, arm)
    return {group: max(arms, key=lambda a: (sums[a], -arms.index(a))) for group, sums in totals.items()}


def simulate_once(
    rows: Sequence[RewardRow],
    rounds: int,
    seed: int,
    rules: RulesPolicy | None = None,
    make_bandit: Callable[[], LinUCBPolicy] | None = None,
) -> dict:
    """Per-round rewards of each policy on one shuffled stream (`rules`: the prior, default RULES)."""
    rules = rules or RulesPolicy()
    arms = rules.arms
    make_bandit = make_bandit or (lambda: LinUCBPolicy(rules=rules))
    make_thompson = lambda: LinearThompsonPolicy(rules=rules, seed=seed)  # noqa: E731
    rng = random.Random(seed)
    stream = [rows[i] for i in _stream(len(rows), rounds, rng)]
    names = list(arms)
    oracle = best_fixed_arms(stream, names)
    rules_arm = {row.qid: rules.choose(row.features).arm for row in rows}
    kbs = list(dict.fromkeys(row.kb for row in rows))
    learners: dict[str, dict[str, LinUCBPolicy]] = {
        "bandit": {kb: make_bandit() for kb in kbs},  # one per KB, as deployed
        "thompson": {kb: make_thompson() for kb in kbs},
    }
    rewards: dict[str, list[float]] = {name: [] for name in POLICIES}
    bandit_arms: list[str] = []
    for row in stream:
        rewards["rules"].append(_value(row, rules_arm[row.qid]))
        for name, per_kb in learners.items():
            learner = per_kb[row.kb]
            arm = learner.choose(row.features).arm
            value = _value(row, arm)
            learner.update(row.features.vector(), arm, value)
            rewards[name].append(value)
            if name == "bandit":
                bandit_arms.append(arm)
        rewards["oracle_per_intent"].append(_value(row, oracle[row.group]))
        available = [a for a in names if row.rewards.get(a) is not None] or names
        rewards["random"].append(_value(row, rng.choice(available)))
    return {
        "rewards": rewards,
        "oracle_arms": {f"{kb}/{intent}": arm for (kb, intent), arm in oracle.items()},
        "bandit_arms": bandit_arms,
        "stream": [row.qid for row in stream],
        "bandits": learners["bandit"],
    }


def held_out_check(rows: Sequence[RewardRow], rounds: int, seed: int, rules: RulesPolicy | None = None) -> dict:
    """Train on one half of the questions, choose greedily on the other half (and vice versa)."""
    rules = rules or RulesPolicy()
    halves: tuple[list[RewardRow], list[RewardRow]] = ([], [])
    for members in _groups(rows).values():  # alternate within each (KB, intent): both halves hold every group
        for i, row in enumerate(sorted(members, key=lambda r: zlib.crc32(r.qid.encode()))):
            halves[i % 2].append(row)
    totals = {"rules": 0.0, "bandit_greedy": 0.0, "n": 0}
    for train, test in (halves, halves[::-1]):
        if not train or not test:
            continue
        trained = simulate_once(train, rounds, seed, rules)["bandits"]
        for row in test:
            greedy = LinUCBPolicy(rules=rules, alpha=0.0)
            if row.kb in trained:
                greedy.load_state_dict(trained[row.kb].state_dict())
            totals["bandit_greedy"] += _value(row, greedy.choose(row.features).arm)
            totals["rules"] += _value(row, rules.choose(row.features).arm)
            totals["n"] += 1
    n = max(totals["n"], 1)
    return {"rules": totals["rules"] / n, "bandit_greedy": totals["bandit_greedy"] / n, "n": totals["n"]}


def simulate(
    rows: Sequence[RewardRow], rounds: int, seed: int = 0, repeats: int = 5, rules: RulesPolicy | None = None
) -> dict:
    """Mean cumulative reward curves and final totals over `repeats` seeds, plus the held-out check."""
    rules = rules or RulesPolicy()
    arms = rules.arms
    runs = [simulate_once(rows, rounds, seed + r, rules) for r in range(repeats)]
    curves = {name: np.mean([np.cumsum(run["rewards"][name]) for run in runs], axis=0) for name in POLICIES}
    finals = {name: [float(np.sum(run["rewards"][name])) for run in runs] for name in POLICIES}
    tail = max(1, rounds // 5)
    last = runs[0]
    per_group: dict[str, dict] = {}
    for (kb, intent), members in sorted(_groups(rows).items()):
        per_group[f"{kb}/{intent}"] = {
            "questions": len(members),
            "rules_arm": _most_common(rules.choose(r.features).arm for r in members),
            "oracle_arm": last["oracle_arms"].get(f"{kb}/{intent}"),
            "arm_means": {a: round(float(np.mean([_value(r, a) for r in members])), 3) for a in arms},
        }
    return {
        "rounds": rounds,
        "seed": seed,
        "repeats": repeats,
        "questions": len(rows),
        "kbs": {kb: sum(1 for r in rows if r.kb == kb) for kb in dict.fromkeys(r.kb for r in rows)},
        "per_question_ceiling": float(np.mean([max(_value(r, a) for a in arms) for r in rows])),
        "mean_reward": {name: float(np.mean(finals[name]) / rounds) for name in POLICIES},
        "total_reward": {name: float(np.mean(finals[name])) for name in POLICIES},
        "total_reward_std": {name: float(np.std(finals[name])) for name in POLICIES},
        "last_fifth_mean_reward": {
            name: float(np.mean([np.mean(run["rewards"][name][-tail:]) for run in runs])) for name in POLICIES
        },
        "regret_vs_oracle": {name: float(curves["oracle_per_intent"][-1] - curves[name][-1]) for name in POLICIES},
        "wins_over_rules": {
            name: sum(1 for a, b in zip(finals[name], finals["rules"], strict=False) if a > b)
            for name in ("bandit", "thompson")
        },
        "gap_closed": {name: _gap_closed(finals, name) for name in ("bandit", "thompson")},
        "groups": per_group,
        "held_out": held_out_check(rows, rounds, seed, rules),
        "curves": {name: curves[name].tolist() for name in POLICIES},
    }


def sensitivity(
    rows: Sequence[RewardRow],
    rounds: int,
    seed: int = 0,
    repeats: int = 5,
    alphas: Sequence[float] = (0.1, 0.3, 1.0),
    prior_weights: Sequence[float] = (1.0, 4.0),
    rules: RulesPolicy | None = None,
) -> list[dict]:
    """LinUCB's mean reward for each (alpha, prior_weight), with the rules and the oracle, same streams."""
    rules = rules or RulesPolicy()
    out = []
    for alpha in alphas:
        for weight in prior_weights:
            make = partial(LinUCBPolicy, rules=rules, alpha=alpha, prior_weight=weight)
            runs = [simulate_once(rows, rounds, seed + r, rules, make_bandit=make)["rewards"] for r in range(repeats)]
            finals = {name: [float(np.sum(run[name])) for run in runs] for name in POLICIES}
            out.append(
                {
                    "alpha": alpha,
                    "prior_weight": weight,
                    "bandit": float(np.mean(finals["bandit"])) / rounds,
                    "rules": float(np.mean(finals["rules"])) / rounds,
                    "oracle": float(np.mean(finals["oracle_per_intent"])) / rounds,
                    "gap_closed": _gap_closed(finals, "bandit"),
                    "wins_over_rules": sum(1 for a, b in zip(finals["bandit"], finals["rules"], strict=False) if a > b),
                }
            )
    return out


def dense_everywhere_rules(arms: dict[str, Arm] | None = None) -> RulesPolicy:
    """A plausible misconfiguration for the stress test: one rule, 'semantic search is always best'."""
    rule = Rule("dense_rerank", 0.9, lambda f: True, lambda f: "（压力测试）任何问题都优先语义检索")
    return RulesPolicy(arms, rules=(rule,))


def _gap_closed(finals: dict[str, list[float]], name: str) -> float | None:
    """Share of the rules -> oracle gap a learner closed (None when there is no gap)."""
    rules, oracle = np.mean(finals["rules"]), np.mean(finals["oracle_per_intent"])
    return float((np.mean(finals[name]) - rules) / (oracle - rules)) if oracle > rules else None


def _groups(rows: Sequence[RewardRow]) -> dict[tuple[str, str], list[RewardRow]]:
    groups: dict[tuple[str, str], list[RewardRow]] = defaultdict(list)
    for row in rows:
        groups[row.group].append(row)
    return groups


def _most_common(values) -> str:
    counts: dict[str, int] = defaultdict(int)
    for value in values:
        counts[value] += 1
    return max(counts, key=lambda value: counts[value]) if counts else ""


# ----------------------------------------------------------------------------- entry point and report


def run_policy_simulation(
    datasets_dir: Path,
    rounds: int = 3000,
    seed: int = 0,
    repeats: int = 5,
    plot_path: Path | None = DEFAULT_PLOT,
    caps: dict[str, dict[str, int]] | None = None,
    with_sensitivity: bool = False,
) -> dict:
    """Build (or read) the reward table on the dev mix, simulate, plot, and report; optionally
    LinUCB's sensitivity to alpha and prior_weight on the same streams."""

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    sources = simulation_sources(Path(datasets_dir), caps)
    rows = build_reward_table(sources, progress=progress)
    report = simulate(rows, rounds, seed, repeats)
    graded = simulate([row.graded() for row in rows], rounds, seed, repeats)
    report["graded"] = {k: v for k, v in graded.items() if k != "curves"}
    stress = simulate(rows, rounds, seed, repeats, rules=dense_everywhere_rules())
    report["stress_dense_everywhere"] = {k: v for k, v in stress.items() if k != "curves"}
    if with_sensitivity:
        report["sensitivity"] = sensitivity(rows, rounds, seed, repeats)
    report["qtypes"] = {f"{r.kb}/{r.qtype}": 0 for r in rows}
    for row in rows:
        report["qtypes"][f"{row.kb}/{row.qtype}"] += 1
    if plot_path is not None:
        plot_learning(report, Path(plot_path))
        report["plot"] = str(plot_path)
    for _, kb, _ in sources:
        kb.close()
    return report


def plot_learning(report: dict, path: Path) -> None:
    """Cumulative reward gained over the rules, and cumulative regret against the per-intent
    oracle, per round (mean over seeds). Plain cumulative reward hides gaps this small."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = {name: np.asarray(values) for name, values in report["curves"].items()}
    rounds = np.arange(1, len(curves["rules"]) + 1)
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name in POLICIES:
        left.plot(rounds, curves[name] - curves["rules"], label=_NAMES[name])
        right.plot(rounds, curves["oracle_per_intent"] - curves[name], label=_NAMES[name])
    left.set(title="cumulative reward minus rules-only (gold doc in top-5)", xlabel="round", ylabel="reward")
    right.set(title="cumulative regret vs per-intent oracle", xlabel="round", ylabel="regret")
    for axis in (left, right):
        axis.axhline(0, color="grey", linewidth=0.5)
    left.legend(fontsize=8)
    figure.suptitle(
        f"{report['questions']} questions, {report['rounds']} rounds, mean of {report['repeats']} seeds", fontsize=10
    )
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def format_policy_report(report: dict) -> str:
    lines = [
        f"{report['questions']} questions ({', '.join(f'{k}: {v}' for k, v in report['kbs'].items())}), "
        f"{report['rounds']} rounds, seeds {report['seed']}..{report['seed'] + report['repeats'] - 1}.",
        "",
        "Reward = a gold doc in the top-5 evidence:",
        "",
        *_summary_table(report),
    ]
    if "graded" in report:
        lines += [
            "",
            "Graded reward = 1 / rank of the first gold doc in the top 5 (MRR@5):",
            "",
            *_summary_table(report["graded"]),
        ]
    if "stress_dense_everywhere" in report:
        lines += [
            "",
            "Stress test, top-5 reward: the rules replaced by one misconfigured rule "
            "(dense_rerank for every question):",
            "",
            *_summary_table(report["stress_dense_everywhere"]),
        ]
    if report.get("sensitivity"):
        lines += [
            "",
            "LinUCB sensitivity (top-5 reward, same streams):",
            "",
            "| alpha | prior_weight | LinUCB | rules | oracle | gap closed | beats rules |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in report["sensitivity"]:
            closed = "" if row["gap_closed"] is None else f"{row['gap_closed']:.0%}"
            lines.append(
                f"| {row['alpha']} | {row['prior_weight']} | {row['bandit']:.4f} | {row['rules']:.4f} | "
                f"{row['oracle']:.4f} | {closed} | {row['wins_over_rules']}/{report['repeats']} |"
            )
    arms = list(next(iter(report["groups"].values()))["arm_means"])
    lines += [
        "",
        "Mean top-5 reward of each arm per KB and intent:",
        "",
        "| KB / intent | questions | rules' usual arm | oracle arm | " + " | ".join(arms) + " |",
        "|---|---|---|---|" + "---|" * len(arms),
    ]
    for group, info in report["groups"].items():
        lines.append(
            f"| {group} | {info['questions']} | {info['rules_arm']} | {info['oracle_arm']} | "
            + " | ".join(f"{v:.2f}" for v in info["arm_means"].values())
            + " |"
        )
    return "\n".join(lines)


def _summary_table(report: dict) -> list[str]:
    lines = [
        "| policy | mean reward | last fifth of rounds | total (± std over seeds) | regret vs oracle | "
        "gap closed | beats rules |",
        "|---|---|---|---|---|---|---|",
    ]
    repeats = report["repeats"]
    for name in POLICIES:
        closed, wins = report["gap_closed"].get(name), report["wins_over_rules"].get(name)
        lines.append(
            f"| {_NAMES[name]} | {report['mean_reward'][name]:.4f} | {report['last_fifth_mean_reward'][name]:.4f} | "
            f"{report['total_reward'][name]:.1f} ± {report['total_reward_std'][name]:.1f} | "
            f"{report['regret_vs_oracle'][name]:.1f} | {'' if closed is None else f'{closed:.0%}'} | "
            f"{'' if wins is None else f'{wins}/{repeats}'} |"
        )
    held = report["held_out"]
    lines += [
        "",
        f"Held-out halves ({held['n']} questions, each half learned on the other): "
        f"rules {held['rules']:.4f}, LinUCB greedy {held['bandit_greedy']:.4f} mean reward. "
        f"Per-question ceiling (best arm for each question): {report['per_question_ceiling']:.4f}.",
    ]
    return lines


# imported from here by the CLI and the tests
__all__ = ["RewardRow", "build_reward_table"]
