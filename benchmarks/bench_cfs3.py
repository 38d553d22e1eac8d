"""Speed of the CFS3 construction (paper 004, §3.1–3.2) on the real sentence pool available here.

Steps timed separately on the same pool (CSAbstruct + SciCite + CSFCube abstracts + S2ORC metadata
abstracts from $SDR_DATA, ~49k sentences; the synthetic corpus when $SDR_DATA is missing):

* reading the Phrasebank (with the glued-word repair) and building the 5-gram dictionary;
* pysbd sentence splitting (S2ORC abstracts);
* tokenising: spaCy's tokenizer in batches (``nlp.tokenizer.pipe``) + lookup lemmas — the cost;
* matching the tokenised pool: one dict lookup per n-gram window (linear in tokens), against a
  naive reference that tests every dictionary n-gram against every sentence (on a subset), with a
  check that both label the same sentences.

Usage: ``python benchmarks/bench_cfs3.py [--quick]``; raw output goes to ``benchmarks/results/cfs3.txt``.
The machine is shared: the load average at the start is recorded with the numbers.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "cfs3.txt"
ROOT = Path(__file__).resolve().parents[1]


def timed(function, *args, **kwargs):
    """Wall time and result of one call."""
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def real_pool(data: Path, quick: bool):
    from sdr.cfs3 import csabstruct_sentences, csfcube_sentences, s2orc_sentences, scicite_sentences

    pool = []
    pool += csabstruct_sentences(data / "csabstruct", progress=False)[0]
    pool += scicite_sentences(data / "scicite", progress=False)[0]
    pool += csfcube_sentences(data / "csfcube", progress=False)[0]
    split_seconds, (s2orc, report) = timed(s2orc_sentences, data / "s2orc" / "metadata" / "sample.jsonl",
                                           progress=False)
    pool += s2orc
    if quick:
        pool = pool[::5]
    return pool, split_seconds, len(s2orc), "CSAbstruct + SciCite + CSFCube + S2ORC abstracts ($SDR_DATA)"


def naive_match(dictionary, lemma_lists):
    """Reference: every dictionary n-gram tested against every sentence (no hashing)."""
    labelled = []
    grams = [(" " + " ".join(g) + " ", label) for g, label in dictionary.labels.items()]
    for lemmas in lemma_lists:
        text = " " + " ".join(lemmas) + " "
        found = {label for gram, label in grams if gram in text}
        labelled.append(found)
    return labelled


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a fifth of the pool")
    args = parser.parse_args()

    from sdr.cfs3 import (Lemmatizer, SentenceMatcher, build_ngram_dictionary, load_phrases, read_phrasebank,
                          synthetic_sentences, tokenize_sentences)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [f"# bench_cfs3 · {time.strftime('%Y-%m-%d %H:%M:%S')} · python {platform.python_version()} · "
             f"{platform.machine()} · {os.cpu_count()} CPUs · load average {load:.1f} at start"
             f"{' · --quick' if args.quick else ''}"]

    def say(line: str) -> None:
        lines.append(line)
        print(line, flush=True)

    data = Path(os.environ.get("SDR_DATA", "/nonexistent"))
    lemmatizer = Lemmatizer()
    if (data / "academic_phrasebank").is_dir():
        seconds, phrases = timed(read_phrasebank, data / "academic_phrasebank")
        say(f"read Phrasebank (80 functions, glue repair)   {len(phrases):>8,} phrases   {seconds:8.2f} s")
        pool, split_seconds, n_split, source = real_pool(data, args.quick)
        say(f"pysbd split of S2ORC abstracts               {n_split:>8,} sentences {split_seconds:8.2f} s "
            f"= {n_split / split_seconds:,.0f} sentences/s (includes reading 1,000 metadata lines)")
    else:
        from sdr.synthetic import make_corpus, write_phrase_tsv

        phrases = load_phrases(write_phrase_tsv(Path("/tmp/sdr_bench_cfs3_phrases.tsv")))
        seconds, (pool, _) = timed(synthetic_sentences, make_corpus(n_papers=200 if args.quick else 1000, seed=0),
                                   progress=False)
        source = "synthetic corpus (no $SDR_DATA)"
        say(f"synthetic pool with pysbd split               {len(pool):>8,} sentences {seconds:8.2f} s")
    seconds, dictionary = timed(build_ngram_dictionary, phrases, 5, lemmatizer, False)
    say(f"5-gram dictionary                             {len(dictionary):>8,} pairs     {seconds:8.2f} s")

    say(f"pool: {source}: {len(pool):,} sentences")
    seconds, tokenized = timed(lambda: list(tokenize_sentences(pool, lemmatizer, progress=False)))
    n_tokens = sum(len(t.lemmas) for t in tokenized)
    say(f"tokenise + lemmatise (spaCy tokenizer.pipe)   {len(pool):>8,} sentences {seconds:8.2f} s "
        f"= {len(pool) / seconds:,.0f} sentences/s, {n_tokens / seconds:,.0f} word tokens/s")
    matcher = SentenceMatcher(dictionary, lemmatizer=lemmatizer)
    seconds, (records, stats) = timed(matcher.label, pool, tokenized=tokenized, progress=False)
    say(f"match tokenised pool (hashed 5-gram windows)  {len(pool):>8,} sentences {seconds:8.2f} s "
        f"= {len(pool) / seconds:,.0f} sentences/s; {stats.labelled:,} labelled")
    seconds_total, (records_direct, _) = timed(matcher.label, pool, progress=False)
    say(f"end to end: tokenise + match                  {len(pool):>8,} sentences {seconds_total:8.2f} s "
        f"= {len(pool) / seconds_total:,.0f} sentences/s")
    assert [r.id for r in records_direct] == [r.id for r in records]

    subset = tokenized[:2000]
    naive_seconds, naive = timed(naive_match, dictionary, [t.lemmas for t in subset])
    fast_seconds, hashed = timed(lambda: [{h.label for h in matcher.find(t.lemmas)} for t in subset])
    same = sum(a == b for a, b in zip(naive, hashed))
    say(f"hashed vs naive on {len(subset):,} sentences: {fast_seconds:.3f} s vs {naive_seconds:.2f} s "
        f"({naive_seconds / fast_seconds:,.0f}x); same label sets for {same}/{len(subset)} sentences")
    assert same == len(subset)

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
