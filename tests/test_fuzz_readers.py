"""Property-based tests (Hypothesis) of every input reader: malformed records, mutated files and random bytes.

The property, for each reader: it returns the correct result or raises the project's input error
(:class:`sdr.jsonio.InputError`) — never another exception. Where a strict reading is easy to state
independently (embeddings, MDCR scores, edge lists), an oracle written here decides which files are valid and
what they hold, and the reader must agree with it exactly. Two commands are fuzzed end to end: a command that
exits 0 has printed or written what the oracle's reading gives; one that fails exits 2 and leaves its previous
output as it was.

Examples are derandomized (the same on every run) and bounded (``max_examples``), so the whole file runs in
well under a minute on one core.
"""

from __future__ import annotations

import gzip
import json
import math
import string
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sdr import cli, facets, graph, parameters
from sdr.evaluate import csfcube, mdcr
from sdr.evaluate.embeddings import ID_KEYS, read_embeddings
from sdr.jsonio import InputError, SkippedLines, load_json, read_jsonl, read_notebook

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "data" / "fixtures"

FUZZ = settings(max_examples=50, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])
FEW = settings(FUZZ, max_examples=25)

# --------------------------------------------------------------------------------------------- strategies

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(allow_nan=True,
                                                                                           allow_infinity=True),
                         st.text(max_size=8))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=6)
ids = st.one_of(st.sampled_from(["a", "b", "c", "7"]), st.integers(0, 9), st.none(), st.booleans(), st.just(""),
                st.floats(allow_nan=True), st.lists(st.integers(), max_size=2))
good_vectors = st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=3, max_size=3)
vectors = st.one_of(good_vectors, good_vectors, st.lists(json_scalars, max_size=4), json_values)


@st.composite
def mutated(draw, valid: bytes) -> bytes:
    """``valid`` with a few bytes inserted, deleted or replaced (or cut short)."""
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["insert", "delete", "replace", "truncate"]))
        byte = draw(st.binary(min_size=1, max_size=3))
        if action == "insert":
            data[position:position] = byte
        elif action == "delete":
            del data[position:position + len(byte)]
        elif action == "replace":
            data[position:position + len(byte)] = byte
        else:
            del data[position:]
    return bytes(data)


@st.composite
def reformatted(draw, valid: bytes) -> bytes:
    """``valid`` with blank lines, CRLF line ends, a byte-order mark or spaces at line ends: still valid."""
    lines = valid.split(b"\n")
    out = []
    for line in lines:
        if draw(st.booleans()):
            out.append(draw(st.sampled_from([b"", b"  ", b"\t"])))
        out.append(line + draw(st.sampled_from([b"", b" ", b"\r"])))
    return draw(st.sampled_from([b"", b"\xef\xbb\xbf"])) + b"\n".join(out)


def file_bytes(valid: bytes):
    """Random bytes, mutations of a valid file, or the valid file itself (as written, or reformatted)."""
    return st.one_of(st.binary(max_size=200), mutated(valid), st.just(valid), reformatted(valid))


# --------------------------------------------------------------------------------------------- oracles


class Invalid(Exception):
    pass


def _refuse(token):
    raise Invalid(token)


def _finite(text):
    value = float(text)
    if not math.isfinite(value):
        raise Invalid(text)
    return value


def _unique(pairs):
    if len({k for k, _ in pairs}) != len(pairs):
        raise Invalid("repeated key")
    return dict(pairs)


def strict_lines(data: bytes):
    """The records of a strict JSONL file as this module reads the contract: UTF-8 (an optional BOM), one
    object per non-blank line, no NaN/infinity/overflow, no repeated key. Raises Invalid otherwise."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Invalid("utf-8") from None
    text = text.removeprefix("\ufeff")
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line, parse_constant=_refuse, parse_float=_finite, object_pairs_hook=_unique)
        except (ValueError, RecursionError):
            raise Invalid("json") from None
        if not isinstance(record, dict):
            raise Invalid("not an object")
        yield record


def oracle_embeddings(data: bytes) -> dict | None:
    """What a correct reader of embeddings JSONL returns, or None when the file must be refused."""
    result, dimension = {}, None
    try:
        for record in strict_lines(data):
            key = next((k for k in ID_KEYS if k in record), None)
            if key is None or "embedding" not in record:
                return None
            paper_id, vector = record[key], record["embedding"]
            if isinstance(paper_id, bool) or not (isinstance(paper_id, int) or
                                                   (isinstance(paper_id, str) and paper_id.strip())):
                return None
            if not isinstance(vector, list) or not vector or any(type(x) not in (int, float) for x in vector):
                return None
            try:
                with np.errstate(over="ignore"):
                    array = np.array(vector, dtype=np.float64).astype(np.float32)
            except OverflowError:
                return None
            if not np.isfinite(array).all() or (dimension is not None and array.size != dimension):
                return None
            dimension = array.size
            if str(paper_id) in result:
                return None
            result[str(paper_id)] = array
    except Invalid:
        return None
    return result or None


def same_embeddings(found: dict, expected: dict) -> bool:
    return list(found) == list(expected) and all(np.array_equal(found[k], expected[k]) for k in found)


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# --------------------------------------------------------------------------------------------- embeddings

VALID_EMBEDDINGS = b'{"paper_id": "a", "embedding": [1.0, 2.5, -3]}\n{"id": 7, "embedding": [0, 0, 1e-3]}\n'


valid_records = st.fixed_dictionaries({"key": st.sampled_from(ID_KEYS), "embedding": good_vectors})
bad_records = st.fixed_dictionaries({"key": st.sampled_from(ID_KEYS + ("pid",)), "id": ids, "embedding": vectors},
                                    optional={"extra": json_values})


@FUZZ
@given(good=st.lists(valid_records, max_size=4), bad=st.lists(st.tuples(st.integers(0, 4), bad_records), max_size=1))
def test_embeddings_records(tmp_path, good, bad):
    records = [{**record, "id": f"p{n}"} for n, record in enumerate(good)]  # valid and distinct …
    for position, record in bad:  # … with at most one record drawn from anything
        records.insert(position % (len(records) + 1), record)
    lines = []
    for record in records:
        line = {record["key"]: record["id"], "embedding": record["embedding"]}
        if "extra" in record:
            line["extra"] = record["extra"]
        lines.append(json.dumps(line))  # Python's json writes NaN and Infinity, as a careless writer would
    path = write(tmp_path, "emb.jsonl", "\n".join(lines).encode())
    check_embeddings(path, path.read_bytes())


@FUZZ
@given(data=file_bytes(VALID_EMBEDDINGS))
def test_embeddings_bytes(tmp_path, data):
    check_embeddings(write(tmp_path, "emb.jsonl", data), data)


@FUZZ
@given(data=st.one_of(st.binary(max_size=60), mutated(gzip.compress(VALID_EMBEDDINGS)),
                      file_bytes(VALID_EMBEDDINGS).map(gzip.compress)))
def test_embeddings_gzip(tmp_path, data):
    try:
        content = gzip.decompress(data)
    except Exception:  # not gzip, truncated, corrupt: the reader must refuse it
        content = None
    path = write(tmp_path, "emb.jsonl.gz", data)
    if content is None:  # refused: at the gzip layer, or at a line it decoded before the damage showed
        with pytest.raises(InputError, match=rf"^{path}"):
            read_embeddings(path)
    else:
        check_embeddings(path, content)


def check_embeddings(path: Path, content: bytes) -> None:
    expected = oracle_embeddings(content)
    event("refused" if expected is None else "read")
    if expected is None:
        with pytest.raises(InputError, match=rf"^{path}"):
            read_embeddings(path)
    else:
        assert same_embeddings(read_embeddings(path), expected)


# --------------------------------------------------------------------------------------------- generic JSON


@FUZZ
@given(data=file_bytes(b'{"a": 1, "b": [1, 2.5, "x", null, true]}\n\n{"c": {"d": NaN}}\n'))
def test_jsonl_and_json_bytes(tmp_path, data):
    path = write(tmp_path, "r.jsonl", data)
    try:
        records = list(read_jsonl(path, allow_empty=True))
    except InputError as error:
        assert str(error).startswith(str(path))
    else:
        assert all(isinstance(record, dict) and isinstance(n, int) for n, record in records)
    try:
        strict = [r for _, r in read_jsonl(path, allow_empty=True, finite=True)]
    except InputError as error:
        assert str(error).startswith(str(path))
        try:
            list(strict_lines(data))
        except Invalid:
            pass
        else:
            pytest.fail(f"refused a strict file: {error}")
    else:
        assert strict == list(strict_lines(data))
    try:
        document = load_json(path, finite=True)
    except InputError as error:
        assert str(error).startswith(str(path))
    else:
        text = data.decode("utf-8").removeprefix("\ufeff")
        assert document == json.loads(text, parse_constant=_refuse, parse_float=_finite)


# --------------------------------------------------------------------------------------------- edge lists

edge_lines = st.one_of(
    st.tuples(st.sampled_from(["a", "b", " c ", "", "d ", "e/f", "g\\h", "\ufeffi"]),
              st.sampled_from(["a", "d", "", "x\x01"])).map("\t".join),
    st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["c", "d"]),
              st.one_of(st.sampled_from(["1", "2.0", "3e0", "0.4", "0", "-2", "nan", "inf", "1e400", "x", "1_0", "",
                                         "1e300", "9007199254740992", "9007199254740994"]),
                        st.floats(allow_nan=True).map(repr))).map("\t".join),
    st.sampled_from(["# a comment", "", "   ", "a\tb\tc\td", "solo"]),
    st.text(alphabet=string.printable, max_size=12),
)


@FUZZ
@given(lines=st.lists(edge_lines, max_size=6), ending=st.sampled_from(["\n", "\r\n"]))
def test_edge_lists(tmp_path, lines, ending):
    path = write(tmp_path, "edges.tsv", ending.join(lines).encode())
    check_edges(path, lines)


@FUZZ
@given(data=file_bytes(b"a\tb\nb\tc\t2\n# comment\nc\ta\t3.0\n"))
def test_edge_list_bytes(tmp_path, data):
    path = write(tmp_path, "edges.tsv", data)
    lines = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:  # refused at this line (or at an earlier line's own problem)
            check_edges(path, lines + ["not\ta\tvalid\tline"])
            return
        lines.append(line.removeprefix("\ufeff") if number == 1 else line)
    check_edges(path, lines)


def check_edges(path: Path, lines: list[str]) -> None:
    expected = []
    for number, line in enumerate(lines, 1):
        text = line.rstrip("\r").removeprefix("\ufeff" if number == 1 else "")  # a byte-order mark is no id
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        parts = text.split("\t")
        if len(parts) not in (2, 3) or not parts[0].strip() or not parts[1].strip():
            expected = None
            break
        # ids as they are: no surrounding whitespace, no path separator, no control character
        if any(p != p.strip() or "/" in p or "\\" in p or any(ord(c) < 32 for c in p) for p in parts[:2]):
            expected = None
            break
        try:
            weight = float(parts[2]) if len(parts) == 3 else 1.0
        except ValueError:
            expected = None
            break
        # a whole number of repeats that an integer holds exactly (1e300 would wrap round and drop the edge)
        if not (math.isfinite(weight) and 1 <= weight <= 2 ** 53 and weight == int(weight)):
            expected = None
            break
        expected.append((parts[0], parts[1], weight))
    event("refused" if not expected else "read")
    if not expected:
        with pytest.raises(InputError, match=rf"^{path}"):
            graph.read_edges_tsv(path)
    else:
        assert graph.read_edges_tsv(path) == expected


# --------------------------------------------------------------------------------------------- abstracts, sentences

records = st.lists(st.fixed_dictionaries({}, optional={
    "paper_id": ids, "id": ids, "title": st.one_of(st.none(), st.text(max_size=5), st.integers()),
    "abstract": st.one_of(st.text(max_size=20), st.none(), st.integers()), "text": st.one_of(st.text(max_size=20),
                                                                                               st.none()),
    "source": st.one_of(st.none(), st.text(max_size=4), st.integers()), "extra": json_values}), max_size=5)


def jsonl(items, junk) -> bytes:
    lines = [json.dumps(item) for item in items]
    if junk is not None:
        lines.insert(junk[0] % (len(lines) + 1), junk[1])
    return "\n".join(lines).encode("utf-8", errors="surrogatepass")


junk_lines = st.one_of(st.none(), st.tuples(st.integers(0, 9), st.sampled_from(
    ["{oops", "[1, 2]", "null", '{"paper_id": "z", "paper_id": "y", "abstract": "x"}', "   "])))


@FUZZ
@given(items=records, junk=junk_lines, skip=st.booleans())
def test_abstracts(tmp_path, items, junk, skip):
    path = write(tmp_path, "abstracts.jsonl", jsonl(items, junk))
    skipped = SkippedLines() if skip else None
    try:
        found = facets.read_abstracts(path, skipped)
    except InputError as error:
        assert not skip and str(error).startswith(f"{path}:")
        return
    ids_found = [record["paper_id"] for record in found]
    assert len(set(ids_found)) == len(ids_found) and all(isinstance(i, str) and i.strip() for i in ids_found)
    assert all(isinstance(r["abstract"], str) and (r.get("title") is None or isinstance(r["title"], str))
               for r in found)
    if skip:
        assert len(found) + skipped.total == sum(1 for line in path.read_text().splitlines() if line.strip())


@FUZZ
@given(items=records, junk=junk_lines)
def test_sentences(tmp_path, items, junk):
    from sdr.cfs3.sentences import read_sentences_jsonl

    path = write(tmp_path, "sentences.jsonl", jsonl(items, junk))
    try:
        sentences, report = read_sentences_jsonl(path, progress=False)
    except InputError as error:
        assert str(error).startswith(f"{path}:")
        return
    assert len({s.id for s in sentences}) == len(sentences)
    assert all(isinstance(s.id, str) and s.id.strip() and isinstance(s.text, str) and s.text for s in sentences)
    assert report.get("lines", 0) == len(sentences) + report.get("empty_texts_skipped", 0)


@FUZZ
@given(items=st.lists(st.fixed_dictionaries({}, optional={"id": ids, "label": ids, "paper_id": ids,
                                                          "text": st.one_of(st.text(max_size=5), st.integers()),
                                                          "section": st.one_of(st.none(), st.text(max_size=3))}),
                      max_size=4), junk=junk_lines)
def test_labels_and_chunks(tmp_path, items, junk):
    from sdr.evaluate import paragraphs, sentences

    path = write(tmp_path, "items.jsonl", jsonl(items, junk))
    for read in (sentences.read_labels, paragraphs.read_chunks):
        try:
            result = read(path)
        except InputError as error:
            assert str(error).startswith(f"{path}")
        else:
            assert result and len(result) == len(items)


# --------------------------------------------------------------------------------------------- MDCR scores

BASE_SCORES = json.loads((FIXTURES / "mdcr" / "scores_test.json").read_text())
score_values = st.one_of(st.floats(-5, 5), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
                         st.none(), st.text(max_size=3), st.integers(-3, 3))


@FEW
@given(changes=st.dictionaries(st.sampled_from(sorted(BASE_SCORES) + ["qa_zz", "qz_t1", "qa", "_"]),
                               st.one_of(score_values, st.just(...)), max_size=4))
def test_mdcr_scores_command(tmp_path, capsys, changes):
    """`sdr evaluate mdcr --scores`: exit 0 only for a valid file, and then the metrics of that file."""
    scores = {**BASE_SCORES, **changes}
    scores = {k: v for k, v in scores.items() if v is not ...}
    path = write(tmp_path, "scores.json", json.dumps(scores).encode())
    valid = all(type(v) in (int, float) and math.isfinite(v) for v in scores.values()) and set(scores) <= set(
        BASE_SCORES)
    event("valid" if valid else "refused")
    code = cli.main(["evaluate", "mdcr", "--data-dir", str(FIXTURES / "mdcr"), "--scores", str(path), "--json"])
    out, err = capsys.readouterr()
    if not valid:
        assert code == 2 and out == "" and str(path) in err
        return
    assert code == 0
    printed = json.loads(out, parse_constant=_refuse)
    expected = mdcr.evaluate(FIXTURES / "mdcr", scores={k: float(v) for k, v in scores.items()})
    assert printed["missing_scores"] == expected["missing_scores"]
    for field, metrics in expected["fields"].items():
        for name, value in metrics.items():
            assert printed["fields"][field][name] == (None if math.isnan(value) else value)


# --------------------------------------------------------------------------------------------- CSFCube rankings

RANKINGS = FIXTURES / "csfcube" / "rankings"
entries = st.one_of(st.lists(json_scalars, max_size=3), json_scalars,
                    st.tuples(st.sampled_from(["1", "2", "999999", "101"]), score_values).map(list))


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 40),
                                st.one_of(st.just("swap"), st.just("swap"), st.just("swap"), entries)), max_size=3))
def test_rankings(tmp_path, edits):
    import shutil

    shutil.copytree(RANKINGS, tmp_path / "r", dirs_exist_ok=True)
    path = tmp_path / "r" / "test-pid2pool-csfcube-toy-method-ranked.json"
    ranking = json.loads(path.read_text())
    queries = sorted(ranking)
    for query_index, position, entry in edits:
        query = queries[query_index % len(queries)]
        if entry == "swap":  # another order of the same candidates: still a valid ranking
            ranked, i = ranking[query], position % len(ranking[query])
            ranked[0], ranked[i] = ranked[i], ranked[0]
        else:
            ranking[query].insert(position % (len(ranking[query]) + 1), entry)
    path.write_text(json.dumps(ranking))
    annotations = csfcube.read_annotations(FIXTURES / "csfcube", "method")
    try:
        pools = csfcube.read_ranked_pools(tmp_path / "r", "toy", "method", annotations)
    except InputError as error:
        assert str(error).startswith(str(path))
        event("refused")
        return
    event("read")
    for query, candidates in pools.items():
        assert len(set(candidates)) == len(candidates) and set(candidates) <= set(annotations[query])


# --------------------------------------------------------------------------------------------- model files


@pytest.fixture(scope="module")
def model_bytes(tmp_path_factory) -> tuple[bytes, facets.SentenceClassifier]:
    from test_facets import fixture_abstracts

    abstracts, labels = fixture_abstracts()
    classifier = facets.SentenceClassifier(folds=3).fit(abstracts, labels)
    path = classifier.save(tmp_path_factory.mktemp("model") / "model.npz")
    return path.read_bytes(), classifier


@FUZZ
@given(data=st.data())
def test_model_files(tmp_path, model_bytes, data):
    valid, classifier = model_bytes
    content = data.draw(st.one_of(st.binary(max_size=100), mutated(valid), st.just(valid)))
    path = write(tmp_path, "model.npz", content)
    try:
        loaded = facets.SentenceClassifier.load(path)
    except InputError as error:
        assert str(error).startswith(f"{path}: ")
        event("refused")
        return
    event("loaded")
    from test_facets import fixture_abstracts

    abstracts, _ = fixture_abstracts()  # a mutation that loads (a zip comment, padding) changed nothing
    assert loaded.predict(abstracts) == classifier.predict(abstracts)


# --------------------------------------------------------------------------------------------- notebooks, -p


NOTEBOOK = json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "id": "a1", "metadata": {},
                                  "outputs": [], "source": "n = 1"}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


@FUZZ
@given(data=st.one_of(file_bytes(NOTEBOOK), json_values.map(lambda v: json.dumps({"cells": v, "nbformat": 4,
                                                                                  "nbformat_minor": 5,
                                                                                  "metadata": {}}).encode())))
def test_notebooks(tmp_path, data):
    path = write(tmp_path, "n.ipynb", data)
    try:
        notebook = read_notebook(path)
    except InputError as error:
        assert str(error).startswith(str(path))
    else:
        assert notebook.nbformat == 4 and isinstance(notebook.cells, list)


@FUZZ
@given(text=st.text(max_size=20), value=json_values)
def test_parameter_values(tmp_path, text, value):
    try:
        parsed = parameters.parse_value("k", text)
    except InputError as error:
        assert str(error).startswith("-p k: ")
    else:
        assert parsed is None or isinstance(parsed, (str, int, float, bool, list, dict)) or hasattr(parsed, "year")
    specs = {name: parameters.spec_of(name, default) for name, default in
             [("n", "5"), ("r", "0.5"), ("b", "False"), ("s", '"x"'), ("l", "[1, 2]"), ("d", "{}"), ("o", "None")]}
    for name, spec in specs.items():
        try:
            parameters.check_values({name: value}, specs, "tiny.ipynb", {name: "-p"})
        except InputError as error:
            assert str(error).startswith(f"-p {name}: ") and name != "o"


# --------------------------------------------------------------------------------------------- sdr facets split


@FEW
@given(items=st.lists(st.fixed_dictionaries({"paper_id": st.one_of(st.sampled_from(["p1", "p2", "p3"]), ids),
                                             "abstract": st.one_of(st.just("Prior work is slow. We train a model."),
                                                                   st.text(max_size=10), st.none())},
                                            optional={"title": st.one_of(st.text(max_size=3), st.none(),
                                                                         st.integers())}), max_size=3),
       junk=junk_lines, skip=st.booleans())
def test_facets_split_command(tmp_path, capsys, model_bytes, items, junk, skip):
    """`sdr facets split`: exit 0 writes one line per valid record (in order, with its facets); a failure
    exits 2 and leaves the previous output byte for byte."""
    valid_bytes, _ = model_bytes
    model = write(tmp_path, "model.npz", valid_bytes)
    source = write(tmp_path, "abstracts.jsonl", jsonl(items, junk))
    out = write(tmp_path, "out.jsonl", b"previous output\n")
    argv = ["facets", "split", str(source), "--out", str(out), "--model", str(model), "--force"]
    code = cli.main(argv + (["--skip-bad"] if skip else []))
    captured = capsys.readouterr()
    event(f"exit {code}")
    if code != 0:
        assert code == 2 and not skip and f"{source}:" in captured.err
        assert out.read_bytes() == b"previous output\n"
    else:
        expected = facets.read_abstracts(source, SkippedLines())
        written = [json.loads(line) for line in out.read_text().splitlines()]
        assert [w["paper_id"] for w in written] == [e["paper_id"] for e in expected]
        assert all(set(w) >= {"background", "method", "result"} and w["abstract"] == e["abstract"]
                   for w, e in zip(written, expected))
        assert json.loads(captured.out)["written"] == len(expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abstracts.jsonl", "model.npz", "out.jsonl"]


def test_deep_nesting_is_an_input_error(tmp_path):
    path = write(tmp_path, "deep.jsonl", b"[" * 100_000 + b"]" * 100_000 + b"\n")
    with pytest.raises(InputError, match=rf"^{path}:1: arrays or objects nested too deeply"):
        list(read_jsonl(path))
    with pytest.raises(InputError, match=rf"^{path}: arrays or objects nested too deeply"):
        load_json(path)
