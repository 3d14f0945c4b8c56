"""Claim-checking examples for the reader (#46): (claim, evidence, label) made from training passages.

The passages are CMRC 2018's (CC BY-SA 4.0, the one commercial reading-comprehension source),
minus the articles the claim benchmark holds out (`is_reader_bench_title`); articles go to valid
by the pair trainer's title hash (pair_data.split_of_title). Claims come from the benchmark's
own generator (workflows/evaluation/perturbations.py) restricted to TRAINING_FAMILIES, so the two
held-out families (entity swap, date change) are never seen in training and the benchmark
measures whether the checker generalises to them. Per passage, besides the generated items: one
of its own sentences verbatim (supported) and sentences of other passages (not enough info).

Two things keep the checker reading the evidence rather than the claim alone (measured on answers to
a KB's own probes, docs/models.md: a checker without them rejected verbatim quotes that hold 不 or
没, and quotes an answer had framed with its product's name or "有用户评价称："):
- minimal pairs: every contradiction's own sentence, unchanged, as a supported example beside it,
  so a word like 不 in a claim decides nothing unless the evidence says otherwise;
- answer framing: a share of the claims, of every label alike, opened the way answers open a quote
  (claim_reader.ANSWER_FRAMES: the passage's title, a source, a user's voice), which therefore says nothing
  about the label.

And one thing meant to keep it from reading every rewording as a change (an LLM-written answer rewords: the
generated paraphrases change a word or two, and a checker trained on them rejected 9 of the 60 faithful
paraphrases of LLM mode's inversion corpus; 678 steps with it moved no measure, docs/models.md "Stated
answers"): **stated answers**, each CMRC question of the passage written
as the statement its answer makes (`stated_answer`: the answer in the question word's place, Chinese asking
in situ — 该球队建立于什么时候？ + 1979年 → 该球队建立于1979年。), supported and worded as a person asking
words it, not as the passage does; a share of them changed by a training family that contradicts
(negation, antonym, number, unit), so a reworded claim is not supported for being reworded.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from citescope.agents.claim_reader import ANSWER_FRAMES, LABELS
from citescope.workflows.evaluation.perturbations import TRAINING_FAMILIES, Passage, factual_sentences, generate
from citescope.workflows.evaluation.reader_holdout import is_reader_bench_title
from citescope.workflows.training.pair_data import SOURCES, read_rows, split_of_title

SOURCE = SOURCES["cmrc2018"]
LABEL_INDEX = {label: index for index, label in enumerate(LABELS)}
UNRELATED_PER_PASSAGE = 2
FRAMED_SHARE = 0.3  # of every label's claims
CHANGED_ANSWER_SHARE = 0.5  # of the stated answers, also given changed by a training family (contradicted)
MAX_ANSWER_CHARS = 20  # a longer answer is a clause of its own, not a phrase to put in the question's place

# The question word a CMRC question asks with (Chinese asks in situ: the answer goes where it stands)
_QUESTION_WORD = re.compile(
    r"什么(?:时候|地方|样的|样)?|何时|何地|何处|何人|多久|多长时间|多长|多大|多高|多重|多远|多宽|多深|谁|多少"
    r"|哪(?:一|几|两|三)?(?:个|位|种|些|年|月|天|里|儿|国|家|部|座|所|条|项|次|支|场|首|名|本|片|类|方面|方)?"
    r"|几(?:个|位|种|年|月|天|次|岁|名|座|部|首|本|项|条|届|代|人)?"
)


@dataclass(frozen=True)
class ClaimExample:
    claim: str
    evidence: str  # the whole passage; the model reads claim_reader.evidence_window of it
    label: int  # index into claim_reader.LABELS
    family: str  # the generator family, "verbatim", "original" (a contradiction's own sentence) or "unrelated"


def stated_answer(question: str, answer: str) -> str | None:
    """The statement a question's answer makes: the answer put where the question's one question word
    stands, the characters it shares with that word's neighbours written once (吴佩慈饰 + 饰的 → 吴佩慈饰的);
    None when the question has no or several question words, the answer is long or a sentence itself,
    or little would be left."""
    asked = re.sub(r"[呢吗呀啊]$", "", question.strip().rstrip("？?。！! "))
    found = list(_QUESTION_WORD.finditer(asked))
    if len(found) != 1 or len(answer) > MAX_ANSWER_CHARS or re.search(r"[。；;！？?]", answer):
        return None
    before, after = asked[: found[0].start()], asked[found[0].end() :]
    given = answer.strip()
    for size in (3, 2, 1):
        if len(given) > size and after.startswith(given[-size:]):
            given = given[:-size]
            break
    for size in (3, 2, 1):
        if len(given) > size and before.endswith(given[:size]):
            given = given[size:]
            break
    statement = before + given + after
    return statement + "。" if len(statement) >= 8 else None


def read_questions(data_dir: Path) -> dict[str, list[tuple[str, str]]]:
    """Passage text -> its questions with their first answers, of the rows read_passages keeps."""
    questions: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for row in read_rows(data_dir / "mrc_train.jsonl"):
        kept = row.get("source") == SOURCE.source_field and not is_reader_bench_title(row.get("title", ""))
        if kept and row.get("answers"):
            questions[row["context"]].append((row["question"], row["answers"][0]["text"]))
    return dict(questions)


def read_passages(data_dir: Path) -> tuple[dict[str, list[Passage]], dict[str, int]]:
    """{"train": [...], "valid": [...]} distinct CMRC passages, and counts (held_out: benchmark rows)."""
    split: dict[str, list[Passage]] = {"train": [], "valid": []}
    seen: set[str] = set()
    counts = Counter[str]()
    for row in read_rows(data_dir / "mrc_train.jsonl"):
        if row.get("source") != SOURCE.source_field:
            continue
        if is_reader_bench_title(row.get("title", "")):
            counts["held_out"] += 1
            continue
        if row["context"] in seen:
            continue
        seen.add(row["context"])
        part = split_of_title(row.get("title", ""))
        passage_id = "cmrc-" + hashlib.sha1(row["context"].encode("utf-8")).hexdigest()[:12]
        split[part].append(Passage(passage_id, row["context"], SOURCE.name, row.get("title", "")))
        counts[part] += 1
    return split, dict(counts)


def claim_examples(
    passages: list[Passage], seeds: list[int], questions: Mapping[str, list[tuple[str, str]]] | None = None
) -> list[ClaimExample]:
    """Generated items for every seed (each seed picks other sentences), each contradiction with its
    own sentence beside it (supported); then per passage one verbatim sentence and
    UNRELATED_PER_PASSAGE sentences of other passages, and its questions' stated answers (`questions`:
    passage text -> (question, answer)), CHANGED_ANSWER_SHARE of them also changed; FRAMED_SHARE of
    them all framed as an answer frames a quote; in a seeded order. No (claim, passage, label) twice."""
    by_id = {p.passage_id: p for p in passages}
    supported, contradicted = LABEL_INDEX["supported"], LABEL_INDEX["contradicted"]
    examples = []
    for seed in seeds:
        for item in generate(passages, seed=seed, families=TRAINING_FAMILIES).items:
            text = by_id[item.evidence_id].text
            examples.append(ClaimExample(item.claim, text, LABEL_INDEX[item.label], item.family))
            if LABEL_INDEX[item.label] == contradicted:
                examples.append(ClaimExample(item.sentence, text, supported, "original"))
    rng = random.Random(f"claims:{seeds}")
    sentences = [(p.passage_id, s) for p in passages for s in factual_sentences(p.text)]
    for passage in passages:
        own = factual_sentences(passage.text)
        if own:
            examples.append(ClaimExample(rng.choice(own), passage.text, supported, "verbatim"))
        for _ in range(UNRELATED_PER_PASSAGE):
            other_id, sentence = rng.choice(sentences)
            if other_id != passage.passage_id:
                label = LABEL_INDEX["not_enough_info"]
                examples.append(ClaimExample(sentence, passage.text, label, "unrelated"))
        for question, answer in (questions or {}).get(passage.text, []):
            examples += _stated(passage, question, answer, rng)
    titles = {p.text: p.title for p in passages}
    examples = [framed(e, titles[e.evidence], rng) if rng.random() < FRAMED_SHARE else e for e in examples]
    examples = list({(e.claim, e.evidence, e.label): e for e in examples}.values())
    rng.shuffle(examples)
    return examples


def _stated(passage: Passage, question: str, answer: str, rng: random.Random) -> list[ClaimExample]:
    """A question's stated answer against its passage (supported) and, for a share, changed by one of the
    training families that contradict (negation, antonym, a number or unit, stock)."""
    statement = stated_answer(question, answer)
    if statement is None:
        return []
    supported, contradicted = LABEL_INDEX["supported"], LABEL_INDEX["contradicted"]
    out = [ClaimExample(statement, passage.text, supported, "answer_stated")]
    if rng.random() < CHANGED_ANSWER_SHARE:
        alone = Passage(passage.passage_id, statement, passage.source, passage.title)
        changed = [i for i in generate([alone], seed=rng.randrange(1 << 30), families=TRAINING_FAMILIES).items
                   if i.label == "contradicted"]  # fmt: skip
        if changed:
            item = rng.choice(changed)
            out.append(ClaimExample(item.claim, passage.text, contradicted, f"answer_{item.family}"))
    return out


def framed(example: ClaimExample, title: str, rng: random.Random) -> ClaimExample:
    """The claim opened by one of ANSWER_FRAMES (one without the title when the passage has none)."""
    frames = [f for f in ANSWER_FRAMES if title or "{title}" not in f]
    frame = rng.choice(frames).format(title=title)
    return ClaimExample(frame + example.claim, example.evidence, example.label, example.family)
