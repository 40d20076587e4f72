#!/usr/bin/env python3
"""Seeded mutation fuzzing of what `gradwire report` and `gradwire advise` read: never a traceback.

Where report_corrupt_test.py spoils files in the ways a person would, this one mutates them
blindly: byte flips, truncations, deleted and repeated spans, JSON tokens inserted anywhere,
for every file of a run folder (summary.json, scenario.json, metrics.jsonl), of a sweep folder
(results.csv, question.json) and advise's plan.json. Each mutant is given to the script's main:
it must return 0 (an unreadable run skipped and listed) or 2 (a whole-sweep file refused), and
no exception may escape. The seed (GRADWIRE_FUZZ_SEED, default 1) and the mutant count per
file (GRADWIRE_FUZZ_CASES, default 200) are printed, so a failure can be replayed.

Run by ctest (`report_fuzz_test`) or directly with /usr/bin/python3. Exit 77 (ctest: skipped)
when matplotlib is missing.
"""
import importlib.util
import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("report_corrupt_test", os.path.join(HERE, "report_corrupt_test.py"))
corrupt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(corrupt)  # exits 77 without matplotlib

SEED = int(os.environ.get("GRADWIRE_FUZZ_SEED", "1"))
CASES = int(os.environ.get("GRADWIRE_FUZZ_CASES", "200"))
TOKENS = [b"{", b"}", b"[", b"]", b",", b":", b'"', b"null", b"NaN", b"-1", b"1e999", b"true",
          b"\n", b"\x00", b"\xff", b'"step"', b'"type"', b"0.5", b"\\u0000", b"\r\n"]


def mutate(data, rng):
    """One to four random edits of `data` (bytes)."""
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(5)
        at = rng.randrange(len(data) + 1)
        if kind == 0 and data:
            data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif kind == 1:
            del data[at:]
        elif kind == 2:
            del data[at:at + rng.randint(1, 16)]
        elif kind == 3:
            data[at:at] = rng.choice(TOKENS)
        else:
            span = bytes(data[at:at + rng.randint(1, 64)])
            data[at:at] = span * rng.randint(1, 3)
    return bytes(data)


class Fuzz(corrupt.Case):
    STEPS, EVERY = corrupt.AdviseOnCorruptInput.STEPS, corrupt.AdviseOnCorruptInput.EVERY
    screening = corrupt.AdviseOnCorruptInput.screening

    def mutants(self, path, name):
        """Yields after each mutant of `path` has been written; restores it at the end."""
        with open(path, "rb") as f:
            original = f.read()
        rng = random.Random(f"{SEED}:{name}")
        for case in range(CASES):
            mutant = mutate(original, rng)
            with open(path, "wb") as f:
                f.write(mutant)
            yield case, mutant
        with open(path, "wb") as f:
            f.write(original)

    def test_run_folder_files(self):
        parent = self.folder()
        corrupt.write_run(parent, "good", plain=True)
        bad = corrupt.write_run(parent, "bad", codec="topk", plain=True)
        for name in ("summary.json", "scenario.json", "metrics.jsonl"):
            for case, mutant in self.mutants(os.path.join(bad, name), name):
                with self.subTest(file=name, case=case, mutant=mutant[:80]):
                    code, stderr, _ = self.report_on(parent)
                    self.assertIn(code, (0, 2), stderr)

    def test_sweep_files(self):
        for name in ("results.csv", "question.json"):
            parent = self.folder()
            corrupt.write_run(parent, "good", plain=True)
            path = os.path.join(parent, name)
            if name == "results.csv":
                corrupt.write(path, "run,status,final_accuracy\ngood,ok,0.6\n")
            else:
                corrupt.write_json(path, {"text": "Does topk win?", "candidate": {"codec.kind": "topk"},
                                          "baseline": {"codec.kind": "none"}})
            for case, mutant in self.mutants(path, name):
                with self.subTest(file=name, case=case, mutant=mutant[:80]):
                    code, stderr, _ = self.report_on(parent)
                    self.assertIn(code, (0, 2), stderr)

    def test_advise_plan(self):
        folder = self.screening()
        plan = os.path.join(folder, "plan.json")
        for case, mutant in self.mutants(plan, "plan.json"):
            with self.subTest(case=case, mutant=mutant[:80]):
                code, _, stderr = self.call(corrupt.advise.main, ["--plan", plan])
                self.assertIn(code, (0, 2), stderr)


if __name__ == "__main__":
    print(f"report_fuzz_test: seed {SEED}, {CASES} mutants per file", file=sys.stderr)
    unittest.main()
