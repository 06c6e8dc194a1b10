"""The one YAML loader: resource attacks and malformed documents end in a short YamlError."""

from __future__ import annotations

import itertools
from importlib import resources
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from grpc_resilience_mesh.services import safe_yaml
from grpc_resilience_mesh.services.safe_yaml import MAX_BYTES, MAX_DEPTH, MAX_NODES, YamlError

EXPERIMENTS = Path(__file__).resolve().parents[3] / "grpc_resilience_mesh" / "chaos" / "experiments"


def billion_laughs(levels: int = 9) -> str:
    """The classic: each level is 9 aliases of the one before (9**9 strings, under 1 KB)."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in itertools.pairwise("abcdefghijklmnopqrstuvwxyz"[:levels]):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def refusal(source: str | bytes) -> str:
    with pytest.raises(YamlError) as caught:
        safe_yaml.load(source, "doc.yaml")
    message = str(caught.value)
    assert message.startswith("doc.yaml: ")
    assert "\n" not in message
    return message


def test_the_billion_laughs_is_refused_for_its_expanded_size() -> None:
    bomb = billion_laughs()
    assert len(bomb) < 1000
    assert f"more than {MAX_NODES} nodes once aliases are expanded" in refusal(bomb)


def test_aliases_within_the_limits_still_share_a_block() -> None:
    doc = "base: &b {retry: {max_attempts: 2}}\none: *b\ntwo: {<<: *b, extra: 1}\n"
    assert safe_yaml.load(doc) == {
        "base": {"retry": {"max_attempts": 2}},
        "one": {"retry": {"max_attempts": 2}},
        "two": {"retry": {"max_attempts": 2}, "extra": 1},
    }


def test_a_remembered_document_is_a_fresh_copy_each_time() -> None:
    doc = "base: &b {retry: {max_attempts: 2}}\none: *b\n"
    first = safe_yaml.load(doc)
    first["base"]["retry"]["max_attempts"] = 9  # a caller changing what it got
    second = safe_yaml.load(doc)
    assert second == {"base": {"retry": {"max_attempts": 2}}, "one": {"retry": {"max_attempts": 2}}}
    assert second["one"] is second["base"]  # the alias still shares one block in the copy
    assert "duplicate key" in refusal("a: 1\na: 2\n") == refusal("a: 1\na: 2\n")  # not kept


@pytest.mark.parametrize(
    "doc",
    [
        "[" * 10_000 + "]" * 10_000,
        "{a: " * 10_000 + "1" + "}" * 10_000,
        "- " * 10_000 + "x\n",
        "".join(" " * i + f"k{i}:\n" for i in range(MAX_DEPTH + 2)),
    ],
    ids=["flow-sequences", "flow-mappings", "block-sequences", "block-mappings"],
)
def test_deep_nesting_is_refused_not_a_recursion_error(doc: str) -> None:
    assert f"nesting deeper than {MAX_DEPTH} levels" in refusal(doc)


@pytest.mark.parametrize("doc", ["[" * 100 + "@", "[{" * 50 + "@"])
def test_deep_nesting_is_refused_at_the_bracket_that_breaks_the_limit(doc: str) -> None:
    # PyYAML's scanner reads up to 1024 characters ahead to resolve a possible key, juggling
    # one candidate per bracket (60 ms for 1,000 brackets); the scanner's own count stops at
    # the 33rd, before it reaches the '@' (a character that cannot start a token).
    assert f"line 1, column {MAX_DEPTH + 1}: nesting deeper" in refusal(doc)


def test_nesting_up_to_the_limit_loads() -> None:
    flow = "[" * (MAX_DEPTH - 1) + "x" + "]" * (MAX_DEPTH - 1)  # 31 sequences + a scalar
    value = safe_yaml.load(flow)
    for _ in range(MAX_DEPTH - 1):
        [value] = value
    assert value == "x"
    block = "".join(" " * i + f"k{i}:\n" for i in range(MAX_DEPTH - 1)) + " " * 31 + "v\n"
    assert safe_yaml.load(block) is not None


def test_depth_counts_through_aliases() -> None:
    deep = "[" * 20 + "x" + "]" * 20
    assert safe_yaml.load(f"a: &a {deep}\nb: *a\n")["b"] == safe_yaml.load(deep)
    nested = f"a: &a {deep}\nb: " + "[" * 20 + "*a" + "]" * 20 + "\n"
    assert "nesting deeper" in refusal(nested)


@pytest.mark.parametrize("doc", ["a: &a [*a]\n", "a: &a {b: *a}\n", "a: &a [1, [2, *a]]\n"])
def test_an_alias_inside_the_node_it_names_is_refused(doc: str) -> None:
    assert "alias *a inside the node it names" in refusal(doc)


def test_a_key_written_twice_is_refused_with_its_line() -> None:
    assert "line 3, column 1: duplicate key 'retry'" in refusal("retry: 1\nx: 2\nretry: 3\n")


def test_merge_keys_are_not_duplicates() -> None:
    assert safe_yaml.load("a: &a {x: 1}\nb: {<<: *a, x: 2}\n")["b"] == {"x": 2}


def test_size_is_counted_in_bytes() -> None:
    assert safe_yaml.load("a: " + "x" * (MAX_BYTES - 4)) is not None
    assert f"more than the {MAX_BYTES} bytes" in refusal("a: " + "x" * MAX_BYTES)
    assert f"more than the {MAX_BYTES} bytes" in refusal("a: " + "é" * (MAX_BYTES // 2))
    assert f"more than the {MAX_BYTES} bytes" in refusal(b"a: " + b"x" * MAX_BYTES)


@pytest.mark.parametrize(
    ("source", "words"),
    [
        (b"a: \xff\xfe\n", "not UTF-8 text (byte 3)"),
        ("a: \x00\n", "not valid YAML: #x0000"),
        ("a: \udcff\n", "not valid YAML: #xdcff"),
        ("x: " + "1" * 5000 + "\n", "a value YAML cannot represent"),
        ("x: 2001-02-30\n", "a value YAML cannot represent"),
        ("x: !!python/object/apply:os.system ['true']\n", "could not determine a constructor"),
        ("a: 1\n---\nb: 2\n", "expected a single document"),
        ("a: [1, 2\n", "line 2, column 1"),
    ],
)
def test_malformed_documents_are_a_yaml_error(source: str | bytes, words: str) -> None:
    assert words in refusal(source)


@pytest.mark.parametrize(
    "doc",
    [
        "x: !" + "t" * 5000 + " 1\n",
        "x: *" + "q" * 5000 + "\n",
        "? " + "k" * 5000 + "\n: 1\n? " + "k" * 5000 + "\n: 2\n",
        "a: &" + "n" * 5000 + " [*" + "n" * 5000 + "]\n",
    ],
    ids=["tag", "undefined-alias", "duplicate-key", "cyclic-alias"],
)
def test_errors_quote_a_name_briefly_never_the_document(doc: str) -> None:
    message = refusal(doc)
    assert len(message) < 250
    assert "t" * 100 not in message and "q" * 100 not in message and "k" * 100 not in message


def test_load_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_bytes(b"a: 1 # caf\xe9\n")
    with pytest.raises(YamlError, match=rf"^{path}: not UTF-8 text"):
        safe_yaml.load_file(str(path))
    with pytest.raises(YamlError, match="cannot read"):
        safe_yaml.load_file(str(tmp_path / "missing.yaml"))
    path.write_bytes(b"a: " + b"x" * (2 * MAX_BYTES))
    with pytest.raises(YamlError, match="bytes a document may have"):
        safe_yaml.load_file(str(path))


def test_every_shipped_policy_and_experiment_loads() -> None:
    policies = resources.files("grpc_resilience_mesh.services") / "policies"
    shipped = [p for p in policies.iterdir() if p.name.endswith(".yaml")]
    shipped += sorted(EXPERIMENTS.glob("*.yaml"))
    assert len(shipped) >= 3
    for path in shipped:
        assert isinstance(safe_yaml.load(path.read_bytes(), str(path)), dict), path


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_documents_within_the_limits_round_trip(value: object) -> None:
    assert safe_yaml.load(yaml.safe_dump(value)) == value


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("[]{}-?:,&*!|>'\"#\n\t ab1.\\"), max_size=200))
def test_any_text_either_loads_or_is_a_yaml_error(text: str) -> None:
    try:
        safe_yaml.load(text, "fuzz")
    except YamlError as err:
        assert str(err).startswith("fuzz: ") and "\n" not in str(err)
