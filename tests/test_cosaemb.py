"""CoSaEmb's recipe: the heading rule, the five aspect texts, the chunker, the three triplet kinds (SPECTER's
inter-document triplets given), the graded squared-L2 loss, and the replicas of SPECTER's training set."""

from __future__ import annotations

import json

import pytest
import torch

from sdr.corpus import (Citation, CitationGraph, Paper, Section, read_s2orc_pdf_parses, read_scicite,
                        read_scirepeval_triplets, section_kind)
from sdr.methods import cosaemb
from sdr.methods.cosaemb import (
    ASPECT_TOKENS,
    SPECIAL_TOKENS,
    Chunker,
    aspect_distribution,
    aspect_texts,
    cosaemb_aspect,
    cosaemb_objective,
    cosaemb_triplets,
    facet_query_text,
    regex_sentences,
    with_margins,
)
from sdr.samplers import Triplet


# ------------------------------------------------------------------------------------------ heading rule
@pytest.mark.parametrize("heading, aspect", [
    ("1 Introduction", "introduction"), ("INTRODUCTION", "introduction"), ("Motivation", "introduction"),
    ("II. RELATED WORK", "related_work"), ("Background", "related_work"), ("Literature Review", "related_work"),
    ("2. Materials and Methods", "method"), ("Methodology", "method"), ("Our Approach", "method"),
    ("4 Experiments", "results"), ("Results", "results"), ("Evaluation", "results"),
    ("5. Conclusions", "conclusion"), ("Discussion", "conclusion"), ("Summary and Outlook", "conclusion"),
    # the earliest keyword decides mixed headings
    ("Results and Discussion", "results"), ("Discussion and conclusions", "conclusion"),
    ("Introduction and Related Work", "introduction"), ("Methods and Results", "method"),
])
def test_heading_rule_keywords(heading, aspect):
    assert cosaemb_aspect(heading) == aspect


@pytest.mark.parametrize("heading", ["Acknowledgements", "Appendix A", "DNA extraction", "Preliminaries", "",
                                     None, "3.2 Regional geology", "Keywords"])
def test_unmatched_headings_go_to_methods(heading):
    assert cosaemb_aspect(heading) == "method"
    assert not cosaemb.cosaemb_aspect_matched(heading)


def test_heading_rule_differs_from_section_kind_only_by_having_no_other_class():
    assert section_kind("Acknowledgements") == "other"
    assert cosaemb_aspect("Acknowledgements") == "method"
    assert section_kind("Results and Discussion") == cosaemb_aspect("Results and Discussion") == "results"


def test_aspect_distribution_counts_distinct_headings_and_occurrences():
    table = aspect_distribution(["Results", "results", "RESULTS ", "Methods", "Cryostat", None, "Introduction"])
    assert list(table.index) == ["Introduction", "Related Works", "Method", "Results", "Conclusion"]
    assert table.loc["Results", "distinct headings"] == 1 and table.loc["Results", "occurrences"] == 3
    assert table.loc["Method", "distinct headings"] == 3  # "methods", "cryostat", "" (None)
    assert table.loc["Method", "of which by default"] == 2
    assert table["occurrences"].sum() == 7


def test_heading_rule_on_scicite_section_names(shared_data):
    """The rule on the 427 distinct (case-folded) real headings of SciCite dev + test."""
    headings = [r.get("sectionName") for split in ("dev", "test")
                for r in read_scicite(shared_data / "scicite" / f"{split}.jsonl")]
    table = aspect_distribution(headings)
    assert table["distinct headings"].sum() == 427
    assert table["occurrences"].sum() == 916 + 1861
    # the distribution of this rule on these headings (a change of keywords shows up here)
    assert table["distinct headings"].to_dict() == {"Introduction": 8, "Related Works": 9, "Method": 278,
                                                    "Results": 104, "Conclusion": 28}
    assert table["occurrences"].to_dict() == {"Introduction": 283, "Related Works": 21, "Method": 942,
                                              "Results": 530, "Conclusion": 1001}
    # only Methods receives headings by default: 216 topical headings ("DNA extraction") and the empty one
    assert table["of which by default"].to_dict() == {"Introduction": 0, "Related Works": 0, "Method": 216,
                                                      "Results": 0, "Conclusion": 0}
    assert cosaemb_aspect("4. Discussion") == "conclusion" and cosaemb_aspect("RESULTS AND DISCUSSION") == "results"


# ------------------------------------------------------------------------------------------ chunker
@pytest.fixture(scope="module")
def section_tokenizer(fresh_tiny_encoder):
    encoder = fresh_tiny_encoder()
    assert encoder.add_special_tokens(SPECIAL_TOKENS) == 7
    return encoder.tokenizer


def _paper(pid: str, sentences_per_section: dict[str, list[str]], title: str = "A study of graphs",
           abstract: str = "We study graphs.") -> Paper:
    sections = [Section(heading, [" ".join(sentences)]) for heading, sentences in sentences_per_section.items()]
    return Paper(pid, title, abstract, sections=sections)


SENTENCES = [f"Sentence number {word} talks about graph neural networks and their training." for word in
             ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")]


def test_special_tokens_are_single_tokens(section_tokenizer):
    for token in SPECIAL_TOKENS:
        pieces = section_tokenizer.tokenize(f"word {token} word")
        assert pieces == ["word", token, "word"], pieces
        assert section_tokenizer.convert_tokens_to_ids(token) != section_tokenizer.unk_token_id


def test_chunker_sentence_boundaries_carry_over_and_limit(section_tokenizer):
    paper = _paper("A", {"1 Introduction": SENTENCES})
    chunker = Chunker(section_tokenizer, max_length=48)
    (chunks,) = chunker.paper_chunks(paper)
    assert len(chunks) >= 3
    for chunk in chunks:  # the limit, counted with the tokenizer's own [CLS] and [SEP]
        assert len(section_tokenizer(chunk.text)["input_ids"]) <= 48
        assert all(s in SENTENCES for s in chunk.sentences)  # whole sentences only
    first, *later = chunks
    assert first.text.startswith("[TTL] A study of graphs [SEP] [INTR] " + SENTENCES[0])
    assert not first.carried
    for previous, chunk in zip(chunks, later):
        assert chunk.carried and chunk.sentences[0] == previous.sentences[-1]
        own = " ".join(chunk.sentences[1:])
        assert chunk.text == f"[INTR] {chunk.sentences[0]} [INTR] {own}"
        assert "[TTL]" not in chunk.text
    # every sentence appears once as a chunk's own sentence, in order
    own_sentences = list(first.sentences) + [s for c in later for s in c.sentences[1:]]
    assert own_sentences == SENTENCES
    assert [c.id for c in chunks] == [f"A#introduction.{i}" for i in range(len(chunks))]
    assert all(c.aspect == "introduction" and c.headings == ("1 Introduction",) for c in chunks)
    assert chunker.report.max_tokens <= 48 and chunker.report.chunks == len(chunks)


def test_chunker_section_tokens_and_a_long_sentence(section_tokenizer):
    long_sentence = "This " + " ".join(["very"] * 80) + " long sentence ends here."
    paper = _paper("B", {"Related Work": SENTENCES[:2], "Acknowledgements": [long_sentence]})
    chunker = Chunker(section_tokenizer, max_length=40)
    related, acknowledgements = chunker.paper_chunks(paper)
    assert related[0].text.startswith("[TTL] A study of graphs [SEP] [RW] ")
    assert acknowledgements[0].aspect == "method" and acknowledgements[0].text.count("[MET]") == 1
    assert len(acknowledgements) > 1 and chunker.report.sentences_cut == 1
    assert all(len(section_tokenizer(c.text)["input_ids"]) <= 40 for c in related + acknowledgements)
    assert chunker.abstract_text(paper) == "[TTL] A study of graphs [SEP] [ABS] We study graphs."


def test_chunker_needs_the_tokens(fresh_tiny_encoder):
    with pytest.raises(ValueError, match="add_special_tokens"):
        Chunker(fresh_tiny_encoder().tokenizer, max_length=64)


def test_regex_sentences_keeps_abbreviations():
    text = "We follow Smith et al. (2020) as in Fig. 3. The results hold. Is 3.5 enough? Yes."
    assert regex_sentences(text) == ["We follow Smith et al. (2020) as in Fig. 3.", "The results hold.",
                                     "Is 3.5 enough?", "Yes."]


# ------------------------------------------------------------------------------------------ aspect texts
def test_sections_merge_into_at_most_five_aspect_texts():
    """§3.3.1: p^intr, p^rel, p^meth, p^res, p^conc; every unmatched heading joins Method, in reading order."""
    paper = _paper("A", {"1 Introduction": ["I1."], "2 Data": ["D1."], "3 Model": ["M1."], "3.1 Training": ["T1."],
                         "4 Results": ["R1."], "4.1 Ablation results": ["R2."], "Acknowledgements": ["A1."]})
    texts = aspect_texts(paper)
    assert [t.aspect for t in texts] == ["introduction", "method", "results"]
    method = texts[1]
    assert method.headings == ("2 Data", "3 Model", "3.1 Training", "Acknowledgements")
    assert method.paragraphs == ("D1.", "M1.", "T1.", "A1.")
    assert texts[2].paragraphs == ("R1.", "R2.")
    assert aspect_texts(Paper("B", "No text", "abstract")) == []


def test_subsections_do_not_multiply_the_triplets(section_tokenizer):
    """Many headings of one kind give one aspect text: one global triplet per aspect, counts ≤ papers."""
    sections = {f"3.{i} Component {i}": SENTENCES[i:i + 1] for i in range(6)}  # six topical Method sub-sections
    papers = {"A": _paper("A", {"Introduction": SENTENCES[:1], **sections}),
              "B": Paper("B", "Cited", "B abstract.")}
    graph = CitationGraph([Citation("A", "B")])
    chunker = Chunker(section_tokenizer, max_length=48)
    triplets, _, report = cosaemb_triplets(papers, graph, chunker, query_ids=["A"])
    assert report.aspects_by_aspect == {"introduction": 1, "method": 1}
    assert sum(t.kind == "global" for t in triplets) == 2
    assert chunker.report.sections == 7 and chunker.report.aspect_texts == 2
    method_chunks = [t for t in triplets if t.kind == "local"]
    assert all("#method." in t.query for t in method_chunks)  # the six sections are one text, chunked together
    table2, _ = cosaemb.counts_tables(report)
    assert (table2["Frequency"] <= report.papers_with_triplets).all()


def test_check_counts_catches_an_aspect_counted_twice():
    report = cosaemb.TripletReport(papers=2, papers_with_triplets=2)
    report.aspects_by_aspect.update({"method": 3})
    with pytest.raises(AssertionError, match="merged into one text per aspect"):
        cosaemb.check_counts(report)


# ------------------------------------------------------------------------------------------ triplets
def _specter_records():
    """SPECTER's triplets as read from cite_prediction: A cites B and C; D and E are not cited by A."""
    paper = {pid: Paper(pid, f"Title {pid}", f"{pid} abstract.") for pid in "BCDE"}
    paper["A"] = _paper("A", {"Introduction": SENTENCES[:6], "Methods": SENTENCES[6:7]})
    return [(paper["A"], paper["B"], paper["D"]), (paper["A"], paper["C"], paper["E"]), (paper["B"], paper["D"], paper["E"])]


def test_specter_training_set_keeps_the_triplets_and_reads_citations_from_them():
    triplets, papers, graph = cosaemb.specter_training_set(_specter_records())
    assert [(t.query, t.positive, t.negative, t.kind, t.margin) for t in triplets] == [
        ("A", "B", "D", "inter", 1.0), ("A", "C", "E", "inter", 1.0), ("B", "D", "E", "inter", 1.0)]
    assert sorted(papers) == list("ABCDE")
    assert sorted(graph.references("A")) == ["B", "C"] and sorted(graph.references("B")) == ["D"]
    with pytest.raises(ValueError, match="no triplets"):
        cosaemb.specter_training_set([])


def test_the_three_triplet_kinds_on_a_hand_built_paper(section_tokenizer):
    inter, papers, graph = cosaemb.specter_training_set(_specter_records())
    chunker = Chunker(section_tokenizer, max_length=48)
    triplets, texts, report = cosaemb_triplets(papers, graph, chunker, query_ids=["A"], seed=0, inter_triplets=inter)
    intro = chunker.paper_chunks(papers["A"])[0]
    assert len(intro) >= 2
    local = [t for t in triplets if t.kind == "local"]
    glob = [t for t in triplets if t.kind == "global"]
    # local: consecutive chunks of one aspect text, one direction (eq. 2: chunk i+1 → chunk i), as the paper counts
    pairs = [(a.id, b.id) for a, b in zip(intro, intro[1:])]
    assert sorted((t.query, t.positive) for t in local) == sorted((b, a) for a, b in pairs)
    # global: each aspect's first chunk → the own abstract (eq. 3)
    assert sorted((t.query, t.positive) for t in glob) == [("A#introduction.0", "A"), ("A#method.0", "A")]
    assert all(t.negative in {"B", "C"} for t in local + glob)  # a paper A cites (§3.3.2)
    # inter-document: SPECTER's own triplets, unchanged, after the intra-document ones
    assert [(t.query, t.positive, t.negative) for t in triplets if t.kind == "inter"] == [
        ("A", "B", "D"), ("A", "C", "E"), ("B", "D", "E")]
    assert {t.kind: t.margin for t in triplets} == {"local": 3.0, "global": 2.0, "inter": 1.0}
    # texts: the abstract input for paper ids, the chunk for chunk ids
    assert texts["A"] == "[TTL] A study of graphs [SEP] [ABS] We study graphs."
    assert texts["B"] == "[TTL] Title B [SEP] [ABS] B abstract."
    assert texts["A#method.0"].startswith("[TTL] A study of graphs [SEP] [MET] ")
    assert all(i in texts for t in triplets for i in (t.query, t.positive, t.negative))
    # counts in the shape of Tables 2-3: one direction, so what is trained is what the paper counts
    table2, table3 = cosaemb.counts_tables(report)
    assert table2.loc["Introduction", "Frequency"] == 1 and table2.loc["Method", "Frequency"] == 1
    assert table2.loc["Introduction", "Section Triplets"] == len(pairs)
    assert table3.loc["Local Context (Eq. 2)", "Frequency"] == table3.loc["Local Context (Eq. 2)", "triplets trained"]
    assert table3.loc["Global Context (Eq. 3)", "Frequency"] == 2
    assert table3.loc["Inter-document (Eq. 4)", "Frequency"] == 3
    # the two-direction option adds eqs. 8-9's reversed pairs; the paper's counts stay
    both, _, report2 = cosaemb_triplets(papers, graph, Chunker(section_tokenizer, max_length=48), query_ids=["A"],
                                        inter_triplets=inter, both_directions=True)
    assert sorted((t.query, t.positive) for t in both if t.kind == "local") == sorted(
        [(b, a) for a, b in pairs] + [(a, b) for a, b in pairs])
    assert ("A", "A#introduction.0") in {(t.query, t.positive) for t in both if t.kind == "global"}
    _, table3_both = cosaemb.counts_tables(report2)
    assert table3_both.loc["Local Context (Eq. 2)", "triplets trained"] == 2 * len(pairs)
    assert table3_both.loc["Local Context (Eq. 2)", "Frequency"] == len(pairs)


def test_inter_triplets_naming_unknown_papers_are_an_error(section_tokenizer):
    inter, papers, graph = cosaemb.specter_training_set(_specter_records())
    del papers["E"]
    with pytest.raises(ValueError, match="names papers not given"):
        cosaemb_triplets(papers, graph, Chunker(section_tokenizer, 48), query_ids=[], inter_triplets=inter)


def test_papers_without_citations_or_sections_are_counted(section_tokenizer):
    papers = {"A": _paper("A", {"Introduction": SENTENCES[:2]}), "B": Paper("B", "No text", "abstract")}
    triplets, _, report = cosaemb_triplets(papers, CitationGraph([Citation("B", "A")]), Chunker(section_tokenizer, 48),
                                           query_ids=["A", "B"])
    assert triplets == []
    assert report.skipped == {"cites no paper with an abstract": 1, "no full text (sections)": 1}


def test_full_text_attaches_by_corpus_id_and_a_mismatch_is_an_error():
    _, papers, _ = cosaemb.specter_training_set(_specter_records())
    report = cosaemb.attach_full_text(papers, {"B": [Section("Introduction", ["Text."])], "Z": []})
    assert (report.attached, report.not_in_triplets) == (1, 1) and papers["B"].sections[0].heading == "Introduction"
    with pytest.raises(ValueError, match="none of the 1 papers of the replica.*real triplets"):
        cosaemb.attach_full_text(papers, {"p00001": []}, "the replica", "the real triplets")


def test_repeat_to_draws_whole_permutations_first():
    triplets = [Triplet(str(i), "p", "n", "inter") for i in range(4)]
    drawn = cosaemb.repeat_to(triplets, 10, seed=3)
    assert len(drawn) == 10 and sorted(t.query for t in drawn[:8]) == sorted("01230123")
    assert cosaemb.repeat_to(triplets, 10, seed=3) == drawn and len(set(t.query for t in drawn[8:])) == 2
    assert len(cosaemb.repeat_to(triplets, 2)) == 2


def test_aspect_paragraphs_are_one_text_per_aspect():
    paper = _paper("A", {"Introduction": ["I1."], "Data": ["D1."], "Model": ["M1."]})
    chunks = cosaemb.aspect_paragraphs([paper, Paper("B", "No text", "abstract")])
    assert [(c.id, c.paper_id, c.section, c.text) for c in chunks] == [
        ("A#introduction", "A", "introduction", "I1."), ("A#method", "A", "method", "D1. M1.")]


def test_with_margins_sets_each_kind():
    triplets = [Triplet("q", "p", "n", kind) for kind in ("local", "global", "inter")]
    assert [t.margin for t in with_margins(triplets, {"local": 6, "global": 4, "inter": 2})] == [6.0, 4.0, 2.0]


def test_margin_settings_and_training_settings_are_the_papers():
    """MARGIN_RUNS' graded settings and PAPER_TRAINING's batch and warm-up are the values of
    data/paper_tables/cosaemb_settings.csv (text-checked against the paper by tests/test_paper_tables.py)."""
    from sdr.book import read_paper_table

    settings = read_paper_table("cosaemb_settings").set_index("model")
    margins = settings.dropna(subset=["m_inter"])
    assert set(margins.index) == {run for run in cosaemb.MARGIN_RUNS if run.startswith("graded")}
    for run, row in margins.iterrows():
        assert cosaemb.MARGIN_RUNS[run] == {"inter": row["m_inter"], "global": row["m_global"], "local": row["m_local"]}
    assert cosaemb.PAPER_MARGINS == cosaemb.MARGIN_RUNS["graded (1, 2, 3)"]  # the paper's best setting
    assert cosaemb.MARGIN_RUNS["flat (1, 1, 1)"] == {"inter": 1.0, "global": 1.0, "local": 1.0}  # Table 6's w/o gradation
    assert cosaemb.PAPER_TRAINING["batch_size"] == settings.loc["batch size", "value"]
    assert cosaemb.PAPER_TRAINING["warmup_ratio"] == settings.loc["warm-up (fraction of the steps)", "value"]
    counts = read_paper_table("cosaemb_counts").set_index("model")
    # Table 2 counts each aspect at most once per paper of the 97,402 with full text
    assert (counts["sections"].dropna() <= counts.loc["papers with full text (S2ORC)", "count"]).all()


# ------------------------------------------------------------------------------------------ loss
def test_graded_squared_l2_loss_against_a_hand_computed_value():
    """Eq. 5 with per-triplet margins on a batch of three triplets, embeddings given by hand."""
    vectors = {"q": [0.0, 0.0], "p1": [1.0, 0.0], "n1": [0.0, 2.0],  # d+² = 1, d−² = 4
               "p2": [2.0, 0.0], "n2": [1.0, 0.0],  # d+² = 4, d−² = 1
               "p3": [1.0, 1.0], "n3": [3.0, 0.0]}  # d+² = 2, d−² = 9
    texts = {key: key for key in vectors}

    def encoder(batch):
        return torch.tensor([vectors[t] for t in batch])

    triplets = [Triplet("q", "p1", "n1", "local", 3.0), Triplet("q", "p2", "n2", "global", 2.0),
                Triplet("q", "p3", "n3", "inter", 1.0)]
    loss = cosaemb_objective(texts)(encoder, triplets)
    # max(0, 1-4+3) = 0; max(0, 4-1+2) = 5; max(0, 2-9+1) = 0 → mean 5/3
    assert loss.item() == pytest.approx(5 / 3)
    graded = with_margins(triplets, {"local": 6.0, "global": 4.0, "inter": 2.0})
    # max(0, 1-4+6) = 3; max(0, 4-1+4) = 7; max(0, 2-9+2) = 0 → mean 10/3
    assert cosaemb_objective(texts)(encoder, graded).item() == pytest.approx(10 / 3)


def test_facet_query_puts_the_facet_tokens_between_title_and_abstract():
    paper = Paper("q", "Title", "The abstract.")
    assert facet_query_text(paper, "background", "[SEP]") == "[TTL] Title [SEP] [INTR] [RW] The abstract."
    assert facet_query_text(paper, "method", "[SEP]") == "[TTL] Title [SEP] [MET] The abstract."
    assert facet_query_text(paper, "result", "[SEP]") == "[TTL] Title [SEP] [RES] The abstract."
    with pytest.raises(ValueError, match="facet"):
        facet_query_text(paper, "objective", "[SEP]")
    assert set(ASPECT_TOKENS.values()) | {"[TTL]", "[ABS]"} == set(SPECIAL_TOKENS)
    assert json.dumps(cosaemb.MARGIN_RUNS)  # plain data, stored with the results


# ------------------------------------------------------------------------------------------ replicas
def test_replicas_of_specter_training_set_read_back_with_the_real_readers(tmp_path, synthetic_corpus):
    from sdr.synthetic.specter_training import corpus_ids, write_cite_prediction, write_s2orc_full_text

    write_cite_prediction(synthetic_corpus, tmp_path / "triplets", seed=0)
    write_s2orc_full_text(synthetic_corpus, tmp_path / "full_text")
    records, _ = read_scirepeval_triplets(tmp_path / "triplets" / "train.jsonl")
    line = json.loads((tmp_path / "triplets" / "train.jsonl").read_text().splitlines()[0])
    assert set(line) == {"query", "pos", "neg"} and set(line["query"]) == {"sha", "corpus_id", "title", "abstract"}
    assert isinstance(line["query"]["corpus_id"], int)
    inter, papers, graph = cosaemb.specter_training_set(records)
    ids = corpus_ids(synthetic_corpus)
    back = {v: k for k, v in ids.items()}
    # positives are cited papers of the corpus
    assert all(back[int(t.positive)] in synthetic_corpus.graph.references(back[int(t.query)]) for t in inter)
    sections, _ = read_s2orc_pdf_parses(tmp_path / "full_text" / "pdf_parses" / "pdf_parses.jsonl", progress=False)
    report = cosaemb.attach_full_text(papers, sections)
    assert report.attached == len(papers) and report.not_in_triplets == len(sections) - len(papers)
    pid = next(iter(papers))
    original = synthetic_corpus.papers[back[int(pid)]]
    assert [s.heading for s in papers[pid].sections] == [s.heading for s in original.sections]
    assert papers[pid].sections[0].paragraphs == original.sections[0].paragraphs


def test_replica_writers_refuse_the_paper_policy(tmp_path, synthetic_corpus):
    from sdr import datasets
    from sdr.synthetic.specter_training import write_cite_prediction, write_s2orc_full_text

    datasets.activate(datasets.policy_for("paper"))
    try:
        for write in (write_cite_prediction, write_s2orc_full_text):
            with pytest.raises(datasets.ReplicaForbidden):
                write(synthetic_corpus, tmp_path / write.__name__)
    finally:
        datasets.activate(None)


def test_chunk_ids_parse_back():
    assert cosaemb.parse_chunk_id("12345#related_work.3") == ("12345", "related_work", 3)
    assert cosaemb.parse_chunk_id("a#b#method.0") == ("a#b", "method", 0)
    assert cosaemb.parse_chunk_id("12345") is None
    with pytest.raises(ValueError, match="not a chunk id"):
        cosaemb.parse_chunk_id("12345#appendix.1")


def test_margin_loss_from_distances_equals_the_objective(fresh_tiny_encoder):
    """The held-out loss computed from triplet_distances is eq. 5 as cosaemb_objective computes it."""
    encoder = fresh_tiny_encoder()
    texts = {"q": "graph neural networks for molecules", "p": "message passing on molecular graphs",
             "n": "a survey of medieval trade routes", "m": "convolutional networks for images"}
    triplets = [Triplet("q", "p", "n", "local"), Triplet("q", "m", "p", "global"), Triplet("p", "q", "m", "inter")]
    graded = with_margins(triplets, cosaemb.PAPER_MARGINS)
    expected = cosaemb_objective(texts)(encoder, graded).item()
    distances = cosaemb.triplet_distances(encoder, triplets, texts)
    assert cosaemb.margin_loss(distances, cosaemb.PAPER_MARGINS) == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="no margin"):
        cosaemb.margin_loss(distances, {"local": 1.0})


def test_plan_run_measures_the_texts_the_triplets_name(section_tokenizer):
    """The paper plan's tokens per text are those of the run's own inputs (chunks and abstracts, cut at max_length,
    with [CLS]/[SEP]), counted by hand here."""
    texts = {"p#method.0": "[TTL] Graphs [SEP] [MET] We count.", "p": "[TTL] Graphs [SEP] [ABS] Graphs are counted.",
             "c": "[TTL] Trees " + "leaf " * 50, "unused": "never named by a triplet"}
    triplets = [Triplet("p#method.0", "p", "c", "global", 2.0)] * 3
    expected = [len(section_tokenizer(texts[i], truncation=True, max_length=16)["input_ids"]) for i in sorted(texts)[:3]]
    assert expected[0] == 16  # "c" is cut
    run = cosaemb.plan_run("graded · seed 0", triplets, texts, section_tokenizer, 16, epochs=2, effective_batch=32)
    assert run == dict(name="graded · seed 0", examples=3, epochs=2, effective_batch=32, texts_per_example=3,
                       tokens_per_text=pytest.approx(sum(expected) / 3))
    # a seeded sample of the texts when there are more than `sample`
    sampled = cosaemb.plan_run("s", triplets, texts, section_tokenizer, 16, 1, 8, sample=2, seed=0)
    pairs = [(expected[i] + expected[j]) / 2 for i in range(3) for j in range(i + 1, 3)]
    assert any(sampled["tokens_per_text"] == pytest.approx(pair) for pair in pairs), (sampled, pairs)
    with pytest.raises(KeyError, match="no text for 1 ids"):
        cosaemb.plan_run("x", [Triplet("p", "c", "gone", "inter", 1.0)], texts, section_tokenizer, 16, 1, 8)
    with pytest.raises(ValueError, match="no triplets"):
        cosaemb.plan_run("x", [], texts, section_tokenizer, 16, 1, 8)


# ------------------------------------------------------------------------ one comparison per benchmark (issue 26)
def _resolved_parameters(chapter: str, profile: str) -> dict:
    """A chapter's parameters at a profile: the notebook's defaults, then profiles.yml (``dry_run``: paper + caps)."""
    import ast

    from sdr import book, dryrun

    defaults = {name: ast.literal_eval(text) for name, text in
                book.notebook_parameters(book.paths.NOTEBOOKS / f"{chapter}.ipynb").items()}
    if profile == "dry_run":
        return {**defaults, **book.chapter_parameters(chapter, "paper", dryrun.dry_run_overrides(chapter))}
    return {**defaults, **book.chapter_parameters(chapter, profile)}


@pytest.mark.parametrize("profile, tokens", [("smoke", 32), ("real", 48), ("paper", 512), ("dry_run", None)])
def test_cosaemb_reads_csfcube_at_the_benchmarks_chapters_length(profile, tokens):
    """CoSaEmb's CSFCube leaderboard rows are compared with the untrained encoder the Benchmarks chapter stores, so the
    chapter reads CSFCube at that chapter's length at every profile (and in the paper dry run, with its caps)."""
    benchmarks, ours = _resolved_parameters("benchmarks", profile), _resolved_parameters("cosaemb", profile)
    assert ours["csfcube_max_length"] == (benchmarks["csfcube_max_length"] or benchmarks["max_length"])
    assert tokens is None or ours["csfcube_max_length"] == tokens


def test_leaderboard_seeds_per_profile():
    """The Summary asserts at real that every trained row has at least 3 seeds; CoSaEmb's rows are CSFCube's, of the
    trained models of csfcube_models (a margin run or the control)."""
    real = _resolved_parameters("cosaemb", "real")
    assert real["leaderboard_seeds"] >= 3
    assert [m for m in real["csfcube_models"] if m in real["margin_runs"] or m == "inter-document only"]
    assert _resolved_parameters("cosaemb", "smoke")["leaderboard_seeds"] == 1
    assert _resolved_parameters("cosaemb", "paper")["leaderboard_seeds"] == 1  # the paper reports one run
