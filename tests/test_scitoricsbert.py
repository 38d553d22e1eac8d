"""SciToricsBERT's recipe (paper 004): the five objectives train through the book's trainer with PK batches."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import torch

from sdr import book
from sdr.evaluate.sentences import LabelledSentence
from sdr.methods import scitoricsbert as st
from sdr.train import evaluate_loss, train

# Four functions, each signalled by its own wording: separable by the words alone.
TOY_TEMPLATES = {
    "aim": "The aim of this study is to examine {}.",
    "table": "The results are summarised in Table {} below.",
    "gap": "Little is known about the role of {} so far.",
    "stats": "Statistical analysis was performed using {} software.",
}
TOPICS = ["proteins", "graphs", "soil", "markets", "language", "neurons", "lasers", "rivers"]


def toy_items() -> list[LabelledSentence]:
    return [LabelledSentence(f"{label}-{i}", template.format(topic), label)
            for label, template in TOY_TEMPLATES.items() for i, topic in enumerate(TOPICS)]


def test_paper_defaults():
    config = st.train_config(seed=3)
    assert (config.epochs, config.batch_size, config.learning_rate) == (5, 64, 2e-5)
    assert (config.weight_decay, config.warmup_steps, config.max_grad_norm, config.seed) == (0.0, 0, 0.0, 3)
    assert st.pk_shape("softmax") == st.pk_shape("arcface") == (64, 1)
    assert st.pk_shape("triplet") == st.pk_shape("multi_similarity") == st.pk_shape("ntxent") == (8, 8)
    objective = st.SentenceFunctionObjective("arcface", num_classes=5, embedding_size=8)
    assert objective.loss.loss.margin == pytest.approx(0.5) and objective.loss.loss.scale == 16
    assert st.SentenceFunctionObjective("multi_similarity", 5, 8).loss.settings == {
        "alpha": 2.0, "beta": 40.0, "base": 0.75}
    assert st.SentenceFunctionObjective("ntxent", 5, 8).loss.settings == {"temperature": 0.1}
    assert st.SentenceFunctionObjective("triplet", 5, 8).loss.miner is None  # all in-batch triplets
    with pytest.raises(ValueError, match="unknown loss"):
        st.SentenceFunctionObjective("contrastive", 5, 8)


def test_loss_settings_are_table6s_reported_values():
    """sdr.losses' values are the ones Table 6 marks as used (data/paper_tables/scitoricsbert_settings.csv, whose rows
    tests/test_paper_tables.py finds in the paper's text), and every setting of every loss is one of its rows."""
    table = st.settings_table()
    assert (table["paper (Table 6, •)"] == table["this book"]).all(), table
    covered = {st.TABLE6_KEYS[key] for key in st.TABLE6_KEYS}
    assert covered == {(loss, key) for loss, values in st.SETTINGS.items() for key in values}
    assert len(table) == len(st.TABLE6_KEYS)
    assert st.SETTINGS["softmax"] == {}  # no search for softmax cross-entropy (Appendix B)


@pytest.mark.parametrize("profile", ["smoke", "real", "paper", "paper dry run"])
def test_the_chapter_reads_csabstruct_at_the_benchmarks_length(profile):
    """One comparison per benchmark (issue 26): the chapter trains and scores at the Benchmarks chapter's
    csabstruct_max_length, so its leaderboard rows and their untrained reference read the same tokens."""
    from sdr.dryrun import dry_run_overrides

    name, overrides = ("paper", dry_run_overrides) if profile == "paper dry run" else (profile, lambda chapter: None)
    ours = book.chapter_parameters("scitoricsbert", name, overrides("scitoricsbert"))
    benchmarks = book.chapter_parameters("benchmarks", name, overrides("benchmarks"))
    assert ours["max_length"] == (benchmarks["csabstruct_max_length"] or benchmarks["max_length"])
    assert ours["leaderboard_seeds"] >= (3 if profile == "real" else 1)


def test_pk_batches_have_the_papers_shape_and_are_reproducible():
    labels = [i % 10 for i in range(200)]  # 10 labels x 20
    sampler = st.pk_batch_sampler(labels, "triplet")
    batches = sampler(200, 0, 0)
    assert len(batches) == 200 // 64 and all(len(b) == 64 for b in batches)
    for batch in batches:
        per_label = pd.Series([labels[i] for i in batch]).value_counts()
        assert len(per_label) == 8 and (per_label == 8).all()
    assert sampler(200, 0, 0) == batches and sampler(200, 0, 1) != batches and sampler(200, 1, 0) != batches
    # softmax: 64 labels x 1 would need 64 labels; with 10 every batch holds all 10, 64 sentences in all
    softmax = st.pk_batch_sampler(labels, "softmax", max_batches=2)(200, 0, 0)
    assert len(softmax) == 2 and all(len(b) == 64 and len({labels[i] for i in b}) == 10 for b in softmax)
    with pytest.raises(ValueError, match="at least 2 labels"):
        st.pk_batch_sampler([0] * 10, "ntxent")


def test_labelled_examples_refuse_unknown_labels():
    items = toy_items()
    labels = st.label_space(items)
    assert labels == ["aim", "gap", "stats", "table"]
    examples = st.labelled_examples(items, labels)
    assert [e.label for e in examples[:2]] == [0, 0] and examples[-1].label == 2
    with pytest.raises(ValueError, match=r"item 0 \(x\): label 'other' is not in the label space"):
        st.labelled_examples([LabelledSentence("x", "Some text.", "other")], labels)


@pytest.mark.parametrize("loss", st.LOSSES)
def test_each_loss_trains_with_pk_batches_and_lowers_its_loss(loss, fresh_tiny_encoder):
    """A few optimizer steps on PK batches lower the loss on the (separable) toy sentences."""
    encoder = fresh_tiny_encoder()
    encoder.pooling = "cls"  # the paper's [CLS] embedding
    items = toy_items()
    labels = st.label_space(items)
    examples = st.labelled_examples(items, labels)
    torch.manual_seed(0)
    objective = st.SentenceFunctionObjective(loss, len(labels), encoder.dimension)
    before = evaluate_loss(encoder, examples, objective, batch_size=len(examples))
    sampler = st.pk_batch_sampler([e.label for e in examples], loss)
    config = st.train_config(epochs=10, learning_rate=1e-3, progress=False)
    result = train(encoder, examples, objective, config, batch_sampler=sampler)
    after = evaluate_loss(encoder, examples, objective, batch_size=len(examples))
    assert result.steps == 10 and math.isfinite(after)
    assert after < before - 0.02, (loss, before, after)


@pytest.mark.parametrize("loss", ["softmax", "arcface"])
def test_classifier_weights_are_trained_saved_and_restored(loss, fresh_tiny_encoder, tmp_path):
    encoder = fresh_tiny_encoder()
    items = toy_items()
    labels = st.label_space(items)
    examples = st.labelled_examples(items, labels)
    torch.manual_seed(0)
    objective = st.SentenceFunctionObjective(loss, len(labels), encoder.dimension)
    initial = {k: v.clone() for k, v in objective.state_dict().items()}
    assert initial, "softmax and ArcFace own class weights"
    validate = st.map_at_r_validator(items)
    result = train(encoder, examples, objective, st.train_config(epochs=2, learning_rate=1e-3, progress=False),
                   output_dir=tmp_path / "run", batch_sampler=st.pk_batch_sampler([e.label for e in examples], loss),
                   validate=validate)
    assert len(result.validation) == 2 and result.best_epoch in (0, 1)
    trained = objective.state_dict()
    assert any(not torch.equal(initial[k], trained[k].cpu()) for k in initial), "class weights did not train"
    saved = Path(result.model_dir) / "objective.pt"
    assert saved.exists()
    restored = st.SentenceFunctionObjective(loss, len(labels), encoder.dimension)
    restored.load_state_dict(torch.load(saved, map_location="cpu"))
    assert all(torch.equal(restored.state_dict()[k], trained[k].cpu()) for k in trained)
    assert validate(encoder) == pytest.approx(max(result.validation))  # the kept epoch is the best one


def test_map_at_r_validator_scores_retrieval(fresh_tiny_encoder):
    items = toy_items()
    score = st.map_at_r_validator(items)(fresh_tiny_encoder())
    assert 0.25 < score <= 1.0  # four balanced labels: chance MAP@R is about 0.25; the wording helps


def _write_cf(folder: Path) -> Path:
    for split in ("train", "eval"):
        for discipline in ("Chem", "CL", "Onc", "Psy"):
            for section in st.CF_SECTIONS:
                lines = [f"{label}\t{split} {discipline} {section} sentence {label}." for label in (0, 1, 1)]
                (folder / f"{split}.{discipline}.{section}").write_text("\n".join(lines) + "\n")
    return folder


def test_cf_sections_pool_train_and_eval_files(tmp_path):
    folder = _write_cf(tmp_path)
    methods = st.cf_section_items(folder, "methods")
    assert len(methods) == 2 * 4 * 3  # both files of every discipline, as the authors' {section}_all.jsonl
    assert {item.label for item in methods} == {"11", "12"}  # labels offset by +11 for methods
    assert sum(item.text.startswith("eval") for item in methods) == 12
    with pytest.raises(ValueError, match="unknown section"):
        st.cf_section_items(folder, "abstract")


def test_table3_average_matches_the_papers_printed_average():
    paper = book.read_paper_table("scitoricsbert_table3")
    assert len(paper) == 12
    for _, row in paper.iterrows():
        scores = {s: {"p@1": row[f"{s}_p@1"], "map@r": row[f"{s}_map@r"]} for s in st.CF_SECTIONS}
        ours = st.table3_row(scores)
        # the paper prints three decimals: the mean of four rounded values is within 0.0015 of its printed avg
        assert abs(ours["avg_p@1"] - row["avg_p@1"]) <= 0.0015, row["model"]
        assert abs(ours["avg_map@r"] - row["avg_map@r"]) <= 0.0015, row["model"]


class _Disconnect(Exception):
    """Stands for a session that dies after its first epoch's checkpoint (the chapter's ``resume`` case)."""


def test_chapter_run_interrupted_after_an_epoch_resumes_to_the_uninterrupted_result(fresh_tiny_encoder, tmp_path):
    """The chapter's runs (PK batches, validation after each epoch, ArcFace class weights) resume from their
    run folder: a run cut after epoch 1 and resumed ends with the same weights, validation and best epoch."""
    items = toy_items()
    labels = st.label_space(items)
    examples = st.labelled_examples(items, labels)
    sampler = st.pk_batch_sampler([e.label for e in examples], "arcface")
    validate = st.map_at_r_validator(items)
    config = st.train_config(epochs=3, learning_rate=1e-3, progress=False)

    def run(output_dir, resume=False, stop_after_step=None):
        encoder = fresh_tiny_encoder()
        encoder.pooling = "cls"
        torch.manual_seed(0)
        objective = st.SentenceFunctionObjective("arcface", len(labels), encoder.dimension)

        def callback(row):
            if row["step"] == stop_after_step:
                raise _Disconnect

        result = train(encoder, examples, objective, config, output_dir=output_dir, resume=resume,
                       batch_sampler=sampler, validate=validate, callback=callback)
        return encoder, objective, result

    steps_per_epoch = len(sampler(len(examples), 0, 0))
    whole_encoder, whole_objective, whole = run(tmp_path / "whole")
    with pytest.raises(_Disconnect):
        # the callback of the first step of epoch 2 runs after epoch 1's validation checkpoint was written
        run(tmp_path / "cut", stop_after_step=steps_per_epoch + 1)
    resumed_encoder, resumed_objective, resumed = run(tmp_path / "cut", resume=True)
    assert resumed.resumed_from_step == steps_per_epoch
    assert resumed.validation == whole.validation and resumed.best_epoch == whole.best_epoch
    assert resumed.steps == whole.steps == 3 * steps_per_epoch
    for key, value in whole_encoder.state_dict().items():
        assert torch.allclose(resumed_encoder.state_dict()[key], value, atol=1e-6), key
    for key, value in whole_objective.state_dict().items():
        assert torch.allclose(resumed_objective.state_dict()[key], value, atol=1e-6), key


# ------------------------------------------------------------------ the CF-labelled replica (Table 3 at smoke/real)


def test_cf_sentence_replica_reads_back_per_section_with_the_planted_functions(tmp_path):
    from sdr.synthetic import make_corpus
    from sdr.synthetic.sentences import CF_SECTION_OF_KIND, cf_section_labels, write_cf_sentences

    corpus = make_corpus(n_papers=40, seed=5)
    folder = write_cf_sentences(corpus, tmp_path / "cf", eval_fraction=0.3, seed=2)
    planted = [(record, CF_SECTION_OF_KIND[record["kind"]])
               for pid in sorted(corpus.papers) for record in corpus.papers[pid].metadata["rhetorical"]]
    section_labels = cf_section_labels()
    sections = {section: st.cf_section_items(folder, section) for section in st.CF_SECTIONS}
    # every planted sentence is read back once, in its section, under its function's offset label
    assert sum(len(items) for items in sections.values()) == len(planted)
    offsets = dict(zip(st.CF_SECTIONS, (0, 11, 17, 23)))
    expected = sorted((section, " ".join(r["text"].split()),
                       str(offsets[section] + section_labels[section].index(r["label"]))) for r, section in planted)
    got = sorted((section, item.text, item.label) for section, items in sections.items() for item in items)
    assert got == expected
    for section, items in sections.items():
        labels = {int(item.label) for item in items}
        assert len(labels) >= 2, section  # retrieval needs two classes per section
        assert min(labels) >= offsets[section] and max(labels) < offsets[section] + len(section_labels[section])
    # both splits are used and a paper's sentences stay in one split
    from sdr.evaluate.sentences import read_cf_sentences
    train_items, eval_items = read_cf_sentences(folder, "train"), read_cf_sentences(folder, "eval")
    assert train_items and eval_items and len(train_items) + len(eval_items) == len(planted)
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"{split}.{d}.{s}" for split in ("train", "eval") for d in ("Chem", "CL", "Onc", "Psy") for s in st.CF_SECTIONS)


def test_cf_section_scores_and_table3_row():
    class WordEncoder:  # one dimension per template word: sentences of one function share their wording
        def encode_texts(self, texts, batch_size=64, progress=False):
            import numpy as np
            words = sorted({w for t in texts for w in t.lower().split()})
            return np.array([[float(w in t.lower().split()) for w in words] for t in texts], dtype=np.float32)

    items = toy_items()
    sections = {section: items for section in st.CF_SECTIONS}
    scores = st.score_sections(WordEncoder(), sections)
    row = st.table3_row(scores)
    assert scores["methods"]["p@1"] == pytest.approx(1.0)  # the template words decide the nearest neighbour
    assert row["avg_map@r"] == pytest.approx(sum(scores[s]["map@r"] for s in st.CF_SECTIONS) / 4)


# ------------------------------------------------------------------ §4.3: training on 10/20/40 labels


def test_label_subset_epochs_follow_footnote_9():
    # 5 epochs on all 77 labels; inversely proportional, rounded half up
    assert [st.label_subset_epochs(n, 77, 5) for n in (10, 20, 40, 77)] == [39, 19, 10, 5]
    assert st.label_subset_epochs(60, 60, 2) == 2 and st.label_subset_epochs(59, 60, 1) == 1
    with pytest.raises(ValueError, match="n_labels"):
        st.label_subset_epochs(0, 77, 5)
    with pytest.raises(ValueError, match="n_labels"):
        st.label_subset_epochs(78, 77, 5)


def test_label_schedule_keeps_the_rule_and_caps_steps_equally():
    # the paper's rule: epochs from footnote 9, batches from the subset's size (n_train // 64)
    paper = st.label_schedule(10, 77, 13_000, 5, "softmax")
    assert (paper.epochs, paper.batches_per_epoch) == (39, 203)
    # CPU cap: every subset ends at the same number of steps, whatever its size
    capped = [st.label_schedule(n, 60, n_train, 2, "triplet", max_batches_per_epoch=3, max_steps=6)
              for n, n_train in ((10, 80), (20, 170), (40, 330))]
    assert [s.steps for s in capped] == [6, 6, 6]
    assert [(s.epochs, s.batches_per_epoch) for s in capped] == [(6, 1), (6, 1), (3, 2)]
    # no cap reached: the rule stands (at least one batch however small the subset)
    assert st.label_schedule(40, 60, 20, 2, "ntxent", max_steps=100) == st.LabelSchedule(3, 1)


def test_seed_intervals_average_seeds_and_pair_sentences():
    reference = {str(i): 0.2 for i in range(40)}
    better = {str(i): 0.3 for i in range(40)}  # every sentence gains 0.1
    same = {str(i): 0.2 + (0.05 if i % 2 else -0.05) for i in range(40)}  # gains and losses that cancel
    runs = pd.DataFrame([{"training set": "CFS3", "loss": "softmax", "seed": s, "map@r": v}
                         for s, v in ((0, 0.30), (1, 0.32), (2, 0.28))]
                        + [{"training set": "CFS3", "loss": "triplet", "seed": 0, "map@r": 0.2}])
    per_query = {("CFS3", "softmax", s): better for s in range(3)} | {("CFS3", "triplet", 0): same}
    table = st.seed_intervals(runs, per_query, reference, samples=500).set_index("loss")
    assert table.loc["softmax", "seeds"] == 3 and table.loc["softmax", "MAP@R mean"] == pytest.approx(0.30)
    assert table.loc["softmax", "σ"] == pytest.approx(0.02)
    assert table.loc["softmax", "Δ vs untrained [CLS]"] == pytest.approx(0.1)
    assert table.loc["softmax", "excludes 0"] and table.loc["softmax", "95 % low"] == pytest.approx(0.1)
    assert table.loc["triplet", "σ"] == 0.0 and not table.loc["triplet", "excludes 0"]
    assert table.loc["triplet", "95 % low"] < 0 < table.loc["triplet", "95 % high"]
    with pytest.raises(ValueError, match="seeds \\[1, 2\\]"):
        st.seed_intervals(runs, {("CFS3", "softmax", 0): better, ("CFS3", "triplet", 0): same}, reference)


def test_sampled_label_subsets_are_nested_seeded_and_valid():
    labels = [f"{i:02d}" for i in range(1, 31)]
    first = st.sample_label_subsets(labels * 2, [5, 10, 20], seed=0)
    assert first == st.sample_label_subsets(labels, [5, 10, 20], seed=0)  # duplicates do not matter
    assert [len(first[n]) for n in (5, 10, 20)] == [5, 10, 20]
    assert set(first[5]) < set(first[10]) < set(first[20]) <= set(labels)
    assert first[10] != st.sample_label_subsets(labels, [10], seed=1)[10]
    with pytest.raises(ValueError, match="2 <= n < 30"):
        st.sample_label_subsets(labels, [30], seed=0)
    kept = st.items_with_labels(toy_items(), ["aim", "gap"])
    assert {i.label for i in kept} == {"aim", "gap"} and len(kept) == 2 * len(TOPICS)


# --- issue 20/23: the data policy, the baselines, MAP@R on the GPU -----------------------------------------------

def test_torch_knn_equals_faiss_and_the_naive_loop_on_cpu():
    """The GPU path (blockwise torch k-NN) gives the faiss path's P@1 and MAP@R; here both run on the CPU."""
    import numpy as np

    from sdr.evaluate import sentences

    rng = np.random.default_rng(0)
    labels = [str(x) for x in rng.integers(0, 6, size=300)]
    vectors = rng.normal(size=(300, 16)) + np.eye(16)[[int(x) for x in labels]] * 3.0  # a planted signal
    faiss_scores = sentences.evaluate(vectors, labels, device="cpu", knn="faiss")
    torch_scores = sentences.evaluate(vectors, labels, device="cpu", knn="torch")
    naive = sentences.naive_scores(vectors, labels)
    assert faiss_scores["report"]["knn"] == "faiss" and torch_scores["report"]["knn"] == "torch"
    for metric in ("p@1", "map@r"):
        assert torch_scores[metric] == pytest.approx(faiss_scores[metric], abs=1e-9)
        assert torch_scores[metric] == pytest.approx(naive[metric], abs=1e-6)
    assert 0.3 < torch_scores["map@r"] < 1  # the planted signal is found, not perfectly
    with pytest.raises(ValueError, match="knn must be"):
        sentences.evaluate(vectors, labels, knn="annoy")


def test_knn_backend_follows_the_device(monkeypatch):
    from sdr.evaluate import sentences

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert sentences.knn_backend() == ("cpu", "faiss")
    with pytest.raises(ValueError, match="no CUDA device"):
        sentences.knn_backend("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert sentences.knn_backend() == ("cuda", "torch")


def test_baselines_are_the_chapter_models_and_name_paper_rows():
    from sdr import datasets

    assert datasets.CHAPTER_MODELS["scitoricsbert"] == tuple(b.model for b in (*st.BASELINES, st.RELEASED))
    table3 = set(book.read_paper_table("scitoricsbert_table3")["model"])
    table4 = set(book.read_paper_table("scitoricsbert_table4")["model"])
    for baseline in (*st.BASELINES, st.RELEASED):
        assert baseline.table3 in table3 and baseline.table4 in table4, baseline
        assert baseline.pooling in ("mean", "cls")
    # every baseline row of the paper but SciBERT (the chapter's base model) and GloVe (stated on the page)
    paper_baselines = {m for m in table4 if not m.startswith("SciToricsBERT")}
    assert paper_baselines - {b.table4 for b in st.BASELINES} == {"SciBERT avg.", "GloVe avg."}


def test_paper_inputs_with_and_without_the_release():
    from sdr import datasets

    assert st.paper_inputs(True) == datasets.CHAPTER_DATA["scitoricsbert"]
    assert "cf_sentences" in st.paper_inputs(True) and "cfs3" in st.paper_inputs(True)
    without = st.paper_inputs(False)
    assert "cfs3" not in without and {"academic_phrasebank", "scicite", "csfcube", "s2orc_sample"} <= set(without)


@pytest.fixture
def no_data(tmp_path, monkeypatch):
    from sdr import datasets

    monkeypatch.delenv("SDR_DATA", raising=False)
    monkeypatch.delenv(datasets.DRY_RUN_ENV, raising=False)
    monkeypatch.setenv("SDR_DATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SDR_DATA_LOCK", str(tmp_path / "lock.json"))
    yield tmp_path
    datasets.activate(None)


def test_paper_without_data_stops_naming_the_manual_cf_download(no_data):
    """At paper the chapter stops before training; the CF-labelled set's error says how to get it by hand."""
    from sdr import datasets

    with pytest.raises(datasets.PaperDataMissing) as caught:
        datasets.ChapterData("scitoricsbert", "paper", download=False, needs=st.paper_inputs(True),
                             models=["allenai/scibert_scivocab_uncased"])
    message = str(caught.value)
    assert message.startswith("scitoricsbert at profile paper: 4 of the 4 data sets it reads are missing")
    assert "iwa2ki.com/FE" in message and "sentence-dataset" in message  # the manual download, explained
    assert "sdr data fetch cfs3" in message and "sdr data fetch pubmed_rct" in message
    for model in datasets.CHAPTER_MODELS["scitoricsbert"]:
        assert f"model {model}" in message


def test_cfs3_training_set_replica_without_data(no_data):
    """real without data (a fresh clone): the CFS3 is the replica, split 4:1, evaluation sentences removed."""
    from sdr import cfs3, datasets
    from sdr.synthetic import make_corpus
    from sdr.synthetic.sentences import write_cfs3

    corpus = make_corpus(n_papers=40, seed=0)
    data = datasets.ChapterData("scitoricsbert", "real", workdir=no_data / "work")
    csabstruct = data.input("csabstruct", role="training", replica=lambda f: f)
    planted = cfs3.read_labelled(write_cfs3(corpus, no_data / "all.jsonl"))
    held = {cfs3.normalise_text(planted[0].text)}
    result = st.cfs3_training_set(data, release=False, csabstruct=csabstruct, seed=0, evaluation_texts=held,
                                  replica=lambda folder: write_cfs3(corpus, folder / "CFS3.jsonl"))
    assert result.origin == "replica" and result.pool_audit is None
    same_text = sum(cfs3.normalise_text(r.text) in held for r in planted)
    assert result.removed_as_evaluation == same_text >= 1
    assert len(result.train) + len(result.valid) == len(planted) - same_text
    assert abs(len(result.valid) / (len(result.train) + len(result.valid)) - 0.2) < 0.05
    assert data.table().loc["academic_phrasebank", "kind"] == "replica"


def test_cfs3_training_set_release_at_paper(no_data, monkeypatch):
    """paper: the released splits are read as released (the dry-run fixture in the release's layout)."""
    from sdr import cfs3, datasets, dryrun

    dryrun.write_cfs3_release(no_data / "cache" / "cfs3", dryrun.FixtureCorpus(n_papers=60))
    monkeypatch.setenv(datasets.DRY_RUN_ENV, "1")  # the Hub models are not checked in the dry run
    data = datasets.ChapterData("scitoricsbert", "paper", download=False, needs=("cfs3",))
    result = st.cfs3_training_set(data, release=True, csabstruct=None, seed=0, replica=None)
    assert result.origin == "release" and result.removed_as_evaluation == 0
    assert [r.text for r in result.train] == [r.text for r in cfs3.read_labelled(no_data / "cache" / "cfs3" /
                                                                                   "CFS3_train.jsonl")]
    assert "CFS3 release (Alab-NII/CFS3)" in result.source


def test_one_dataset_read_as_replica_and_real_shows_twice(no_data):
    """smoke with data: CSAbstruct is a replica to train on and real to score; the page's table lists both."""
    from sdr import datasets

    real = no_data / "mirror" / "csabstruct"
    real.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        (real / f"{split}.jsonl").write_text('{"sentences": ["a"], "labels": ["x"]}\n')
    import os

    os.environ["SDR_DATA"] = str(no_data / "mirror")
    try:
        data = datasets.ChapterData("scitoricsbert", "smoke", "auto", workdir=no_data / "work")
        training = data.input("csabstruct", role="training", replica=lambda folder: folder)
        test = data.input("csabstruct", replica=lambda folder: folder)
    finally:
        del os.environ["SDR_DATA"]
    assert (training.kind, test.kind) == ("replica", "real")
    table = data.table()
    assert table.loc["csabstruct", "kind"] == "replica" and table.loc["csabstruct (evaluation)", "kind"] == "real"


# --------------------------------------------------------------------------------------------- the chapter's steps
def _check_inputs(check_set: str, trained_scores: list[float], untrained: float):
    """The pieces gold_check reads: the check's model trained with len(trained_scores) seeds, scored on the test of
    CHECKS[check_set] (untrained [CLS] there: ``untrained``), the other model far above it."""
    from types import SimpleNamespace

    column = "map@r" if st.CHECKS[check_set].scored_on == "CSAbstruct test" else "avg_map@r"
    rows = [{"training set": check_set, "loss": "triplet", "seed": seed, column: score}
            for seed, score in enumerate(trained_scores)]
    rows.append({"training set": "CSAbstruct train" if check_set == "CFS3" else "CFS3", "loss": "triplet",
                 "seed": 0, column: 0.99})
    table = pd.DataFrame(rows)
    means = pd.DataFrame({"training set": ["CFS3", "CSAbstruct train"], "loss": ["triplet", "triplet"],
                          "map@r": [0.2, 0.3], "p@1": 0.5, "pubmedrct p@1": 0.5, "pubmedrct map@r": 0.5})
    runs = table if column == "map@r" else means
    trained = st.TrainedRuns(runs=runs.assign(**{"p@1": 0.5, "pubmedrct p@1": 0.5, "pubmedrct map@r": 0.5})
                             if column == "map@r" else means, cf_runs=table, validation=pd.DataFrame(),
                             batches=pd.DataFrame(),
                             per_query={(check_set, "triplet", seed): {"s1": 0.5, "s2": 0.25 + seed}
                                        for seed in range(len(trained_scores))})
    if column == "map@r":  # the best-loss line reads both training sets
        trained.runs["map@r"] = trained.runs["map@r"].fillna(0.2)
    cls = "m [CLS] (untrained)"
    baselines = st.Baselines(scores={cls: {"csabstruct_map@r": untrained}}, cf={cls: {"avg_map@r": untrained}},
                             per_query={cls: {"s1": 0.5, "s2": 0.2}}, external={}, untrained_mean="m avg. (untrained)",
                             untrained_cls=cls)
    sets = SimpleNamespace(check_set=check_set, test_items=[None] * 7, sets={"CFS3": None, "CSAbstruct train": None})
    branches = []
    run = SimpleNamespace(p=SimpleNamespace(check_loss="triplet", losses=["softmax", "triplet"]), branches=branches,
                          branch=branches.append)
    return run, sets, baselines, trained


@pytest.mark.parametrize("check_set", sorted(st.CHECKS))
def test_gold_check_scores_the_test_the_data_policy_gives_it(check_set):
    """CHECKS picks the test by the training set; the gain is the seeds' mean minus untrained [CLS], and with several
    seeds it must also clear twice their own σ; a model below untrained fails the page's expect_gain line."""
    from types import SimpleNamespace

    run, sets, baselines, trained = _check_inputs(check_set, [0.30, 0.40, 0.50], untrained=0.25)
    gold = st.gold_check(run, None, sets, baselines, trained)
    assert gold.gain == pytest.approx(0.40 - 0.25) and gold.seeds == 3
    spread = pd.Series([0.30, 0.40, 0.50]).std(ddof=1)
    assert gold.required == pytest.approx(max(st.CHECKS[check_set].margin, 2 * spread))
    assert gold.summary.iloc[:, 0]["margin (2 σ, measured)"] == st.CHECKS[check_set].margin
    expected_test = "CSAbstruct test" if check_set == "CSAbstruct train" else "CF-labelled replica"
    assert expected_test in gold.summary.columns[0] and "over untrained [CLS]" in gold.what
    page = SimpleNamespace(gain_checks={})  # the ChapterRun attribute expect_gain records each gain in
    with pytest.raises(book.ChapterCheckFailed, match=r"over untrained \[CLS\]"):  # 0.15 < 2 σ = 0.2
        book.ChapterRun.expect_gain(page, gold.model, gold.gain, gold.required, gold.what, applies=gold.applies,
                                    decimals=3)
    run, sets, baselines, trained = _check_inputs(check_set, [0.50], untrained=0.25)
    gold = st.gold_check(run, None, sets, baselines, trained)
    assert gold.required == st.CHECKS[check_set].margin  # one seed: no σ of its own
    assert book.ChapterRun.expect_gain(page, gold.model, gold.gain, gold.required, gold.what, decimals=3)
    run.p.losses = ["softmax"]
    with pytest.raises(book.ChapterCheckFailed, match="check_loss 'triplet' is not among"):
        st.gold_check(run, None, sets, baselines, trained)


def test_a_trained_model_scored_like_the_untrained_encoder_fails_the_chapter():
    """Issue 30: a trained model that scores exactly as untrained [CLS] on every test sentence was not trained, or
    another encoder was scored; the check names it. Where every model differs the run records the branch."""
    run, sets, baselines, trained = _check_inputs("CSAbstruct train", [0.30, 0.40], untrained=0.25)
    st.gold_check(run, None, sets, baselines, trained)
    assert "trained rows differ from the untrained encoder" in run.branches
    trained.per_query[("CSAbstruct train", "triplet", 1)] = dict(baselines.per_query[baselines.untrained_cls])
    with pytest.raises(book.ChapterCheckFailed, match=r"1 trained models score exactly as the untrained \[CLS\] "
                                                      r"encoder.*\('CSAbstruct train', 'triplet', 1\)"):
        st.gold_check(run, None, sets, baselines, trained)


def test_without_the_checks_model_the_check_is_not_applied_and_says_why():
    run, sets, baselines, trained = _check_inputs("CSAbstruct train", [0.30], untrained=0.25)
    trained.runs = trained.runs[trained.runs["training set"] != "CSAbstruct train"]
    trained.per_query.clear()
    gold = st.gold_check(run, None, sets, baselines, trained)
    assert not gold.applies and gold.seeds == 0 and "part 'main'" in gold.why_not
    assert "trained rows differ from the untrained encoder" not in run.branches


def test_leakage_audit_applies_the_checks_the_cfs3_origin_calls_for():
    """The book's CFS3 (and its replica) must share no sentence with CSAbstruct test; the release is audited and used
    as released."""
    from types import SimpleNamespace

    train = [LabelledSentence(f"t{i}", text, "01") for i, text in enumerate(["The aim of this study is X.",
                                                                             "Results are in Table 2."])]
    test = [LabelledSentence("x", "the aim of this study is  X.", "objective")]  # equal after normalisation

    def audit(origin):
        cfs3_set = st.CFS3TrainingSet(train, [], origin, "CFS3 somewhere")
        inputs = SimpleNamespace(cfs3_set=cfs3_set, cf_input=SimpleNamespace(real=False), cf_texts=set())
        sets = SimpleNamespace(test_items=test, csabstruct_dev=[],
                               sets={"CFS3": (train, []), "CSAbstruct train": ([], [])})
        return st.leakage_audit(None, inputs, sets)

    assert audit("release").loc["CFS3", "equal to a CSAbstruct test sentence"] == 1
    for origin in ("replica", "book build"):
        with pytest.raises(book.ChapterCheckFailed, match=f"CFS3 \\({origin}\\): 1 sentences equal to a CSAbstruct test"):
            audit(origin)


def test_a_step_line_can_replace_the_data_line_it_says_more_about():
    """ChapterRun.add_source(line, replaces=…): the CFS3 release's data line gives way to the line with its split's
    sizes, in the data line's place among the captions' sources (the stored sources keep their order)."""
    from types import SimpleNamespace

    page = object.__new__(book.ChapterRun)
    page.data = SimpleNamespace(sources=["CSAbstruct", "CFS3 release", "PubMed-RCT"])
    page.sources_extra, page.sources_replaced = [], []
    page.add_source("CFS3 release: 10 train, 2 valid", replaces=["CFS3 release"])
    page.add_source("CSAbstruct test: 5 of 9 sentences")
    assert page.sources == ["CSAbstruct", "PubMed-RCT", "CFS3 release: 10 train, 2 valid",
                            "CSAbstruct test: 5 of 9 sentences"]
