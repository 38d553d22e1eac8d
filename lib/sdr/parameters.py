"""Chapter parameters checked before a notebook runs: ``-p KEY VALUE`` parsed as YAML, values typed like the
notebook's ``parameters`` cell.

A chapter's parameters come from ``profiles.yml`` and ``sdr chapter NAME -p KEY VALUE``; papermill would
inject any value into the notebook, where a wrong type fails cells later (``-p n abc`` ran the notebook and
failed in cell 7). Here, before anything runs:

* :func:`parse_value` reads a ``-p`` value as YAML (``3`` → int, ``0.5`` and ``2e-5`` → float, ``true`` →
  bool, ``[1, 2]`` → list, anything else a string); invalid YAML is an :class:`~sdr.jsonio.InputError`
  that starts with ``-p KEY:`` and says where it broke, never a traceback;
* :func:`parameter_specs` reads the parameters cell (papermill's ``inspect_notebook``): each name's default
  and, when the cell annotates it (``use_real_data: Union[bool, str] = False``), its declared types;
* :func:`check_values` checks merged values against them: the declared types, else the type of the
  default — ``int``, ``float`` (an int is accepted: ``1`` for a learning rate), ``bool`` (not 0/1),
  ``str``, ``list`` (elements typed like a non-empty default's elements), ``dict``; a default of ``None``
  (papermill's marker of a required value) or an expression (``Path(...)``) accepts anything. Numbers must
  be finite. All mismatches are reported together, each naming where the value came from.

Because the check runs before papermill starts, a parameter error leaves no half-executed notebook behind.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from sdr.jsonio import InputError, read_notebook

SHARED_TYPES: dict[str, tuple[type, ...]] = {"use_real_data": (bool, str), "parts": (str, list)}
"""Parameters whose types are the book's, not one notebook's: ``use_real_data`` is true, false or ``"auto"``
in every chapter (:func:`sdr.datasets.policy_for`), whatever its default there; ``parts`` is ``"all"``,
``"headline"`` or a list of part names (:func:`sdr.plan.resolve_parts`)."""

TYPE_NAMES = {"bool": bool, "int": int, "float": float, "str": str, "list": list, "dict": dict,
              "List": list, "Dict": dict, "None": type(None), "NoneType": type(None)}


class YamlLoader(yaml.SafeLoader):
    """YAML 1.2's core schema (PyYAML reads YAML 1.1): plain scalars are null (``null``, ``~``, empty), booleans
    (``true``/``false`` only: ``yes``, ``no``, ``on``, ``off`` stay strings), integers in base 10 (``010`` is 10, not
    octal 8; ``0o10`` and ``0x10`` say their base), floats (``2e-5`` without a dot is a float, as learning rates are
    written) and strings; ``5:00`` is a string, not the sexagesimal 300, and dates stay strings."""

    yaml_implicit_resolvers: dict = {}


def _construct_int(loader, node) -> int:
    text = loader.construct_scalar(node)
    sign, digits = (-1, text[1:]) if text.startswith("-") else (1, text.lstrip("+"))
    if digits.startswith("0o"):
        return sign * int(digits[2:], 8)
    if digits.startswith("0x"):
        return sign * int(digits[2:], 16)
    return sign * int(digits, 10)


for _tag, _pattern, _first in (
        ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
        ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
        ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
        ("tag:yaml.org,2002:float",
         r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
         list("-+0123456789."))):
    YamlLoader.add_implicit_resolver(_tag, re.compile(_pattern), _first)
YamlLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def load_yaml(text: str):
    """YAML text read with :class:`YamlLoader` (YAML 1.2's core schema)."""
    return yaml.load(text, Loader=YamlLoader)


def parse_value(key: str, text: str):
    """One ``-p KEY VALUE`` value as YAML; invalid YAML raises :class:`InputError` starting ``-p KEY:``."""
    try:
        return load_yaml(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        where = f" at column {mark.column + 1}" if mark is not None else ""
        raise InputError(f"-p {key}: {text!r} is not valid YAML ({problem}{where}); expected a number, true/false, "
                         f"a string or a list such as [1, 2] (quote a string that looks like something else: "
                         f"-p {key} '\"{text}\"')") from None


def parse_overrides(pairs: Iterable[tuple[str, str]]) -> dict:
    """``-p KEY VALUE`` pairs (argparse's ``nargs=2, action="append"``) → ``{KEY: value}``; a key given twice
    is an error (the second would win silently)."""
    values: dict = {}
    for key, text in pairs:
        if key in values:
            raise InputError(f"-p {key}: given twice; expected each parameter once")
        values[key] = parse_value(key, text)
    return values


@dataclass(frozen=True)
class ParameterSpec:
    """A parameter of a notebook's parameters cell: its default (as written and as a value) and the types it
    takes (``None``: anything)."""

    name: str
    default_text: str
    default: object
    types: tuple[type, ...] | None
    element_type: type | None = None

    def describe(self) -> str:
        if self.types is None:
            return "any value"
        names = " or ".join("null" if t is type(None) else t.__name__ for t in self.types)
        if self.element_type is not None:
            names += f" of {self.element_type.__name__}"
        return names


_UNKNOWN = object()


def _literal(text: str):
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _UNKNOWN


def _annotation_types(annotation: str | None) -> tuple[type, ...] | None:
    """``"Union[bool, str]"``, ``"Optional[int]"``, ``"float"``, ``"List[int]"`` → types; None if unreadable."""
    if not annotation or annotation == "None":
        return None
    text = annotation.replace(" ", "")
    for wrapper in ("Union[", "Optional["):
        if text.startswith(wrapper) and text.endswith("]"):
            names = text[len(wrapper):-1].split(",")
            if wrapper == "Optional[":
                names.append("None")
            types = [TYPE_NAMES.get(re.sub(r"\[.*$", "", name)) for name in names]
            return None if None in types else tuple(dict.fromkeys(types))
    base = TYPE_NAMES.get(re.sub(r"\[.*$", "", text))
    return (base,) if base is not None else None


def _element_type(values: list) -> type | None:
    kinds = {type(v) for v in values}
    if len(kinds) == 1 and next(iter(kinds)) in (bool, int, float, str):
        return next(iter(kinds))
    if kinds == {int, float}:
        return float
    return None


def spec_of(name: str, default_text: str, annotation: str | None = None) -> ParameterSpec:
    """A :class:`ParameterSpec` from the parameters cell's text (``default_text`` as written there)."""
    default = _literal(default_text)
    declared = _annotation_types(annotation)
    element = _element_type(default) if isinstance(default, list) and default else None
    if declared is not None:
        return ParameterSpec(name, default_text, default, declared, element if declared == (list,) else None)
    if default is _UNKNOWN or default is None or default == "None":
        return ParameterSpec(name, default_text, default, None)
    return ParameterSpec(name, default_text, default, (type(default),), element)


def parameter_specs(notebook: str | Path, declared: Mapping[str, tuple[type, ...]] | None = None
                    ) -> dict[str, ParameterSpec]:
    """``{name: ParameterSpec}`` of a notebook's ``parameters`` cell (papermill's ``inspect_notebook``).

    ``declared`` gives types that win over the cell's defaults (default :data:`SHARED_TYPES`); an annotation
    in the cell (``csfcube_eval: Union[bool, str] = False``) wins over both.
    """
    import papermill

    notebook = Path(notebook)
    if not notebook.is_file():
        raise FileNotFoundError(f"{notebook}: chapter notebook not found")
    read_notebook(notebook)  # a broken notebook is an InputError naming it, not papermill's traceback
    inferred = papermill.inspect_notebook(str(notebook))
    if not inferred:
        raise InputError(f"{notebook}: no cell tagged 'parameters'; expected one (every chapter needs one)")
    declared = SHARED_TYPES if declared is None else declared
    specs = {}
    for name, info in inferred.items():
        annotation = info.get("inferred_type_name")
        if (annotation in (None, "None")) and name in declared:
            annotation = "Union[" + ", ".join(t.__name__ for t in declared[name]) + "]"
        specs[name] = spec_of(name, str(info.get("default")), annotation)
    return specs


def _fits(value, kind: type) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is type(None):
        return value is None
    return isinstance(value, kind)


def mismatch(spec: ParameterSpec, value) -> str | None:
    """Why ``value`` does not fit ``spec`` (None when it does)."""
    if spec.types is None:
        return None
    if not any(_fits(value, kind) for kind in spec.types):
        found = "a non-finite number" if isinstance(value, float) and not math.isfinite(value) else \
            ("null" if value is None else _a(type(value).__name__))
        return f"{_shown(value)} is {found}; expected {spec.describe()}"
    if isinstance(value, list) and spec.element_type is not None:
        bad = next((item for item in value if not _fits(item, spec.element_type)), _UNKNOWN)
        if bad is not _UNKNOWN:
            return (f"{_shown(value)} holds {_shown(bad)} ({_a(type(bad).__name__)}); expected a list of "
                    f"{spec.element_type.__name__}")
    return None


def _a(name: str) -> str:
    return f"an {name}" if name[:1] in "aeiou" else f"a {name}"


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def merge_layers(layers: Iterable[tuple[str, Mapping | None]]) -> tuple[dict, dict[str, str]]:
    """Merge parameter layers, later winning: ``[(origin, values), ...]`` → ``(values, {key: origin})``.

    E.g. ``[("profile smoke of profiles.yml", ...), ("profile smoke, chapter specter of profiles.yml", ...),
    ("-p", overrides)]``; the origins feed :func:`check_values`'s messages.
    """
    merged: dict = {}
    origins: dict[str, str] = {}
    for origin, values in layers:
        for key, value in (values or {}).items():
            merged[key] = value
            origins[key] = origin
    return merged, origins


def check_values(values: Mapping, specs: Mapping[str, ParameterSpec], notebook: str | Path,
                 origins: Mapping[str, str] | None = None) -> None:
    """Raise :class:`InputError` listing every value of ``values`` that does not fit its parameter.

    ``origins`` names where each key's value came from (``"-p"``, ``"profile smoke of profiles.yml"``), so the
    message says what to change: ``-p n: 'abc' is a str; expected int (specter.ipynb has n = 5)``. Keys
    without a spec are left to the caller's unknown-key check.
    """
    origins = origins or {}
    name = Path(notebook).name
    problems = []
    for key, value in values.items():
        spec = specs.get(key)
        if spec is None:
            continue
        reason = mismatch(spec, value)
        if reason is not None:
            origin = origins.get(key, "")
            label = f"-p {key}" if origin == "-p" else f"{key}{f' (from {origin})' if origin else ''}"
            problems.append(f"{label}: {reason} ({name} has {key} = {spec.default_text})")
    if len(problems) == 1:
        raise InputError(f"{problems[0]}; nothing was executed")
    if problems:
        raise InputError(f"{len(problems)} parameter values do not fit the parameters cell of {name}; nothing was "
                         f"executed:\n  " + "\n  ".join(problems))



# ------------------------------------------------------------------------------------ declared ranges and choices
RULE_KEYS = ("choices", "min", "max", "above", "below", "pattern")


def parameter_rules(chapter: str, profiles: Mapping) -> dict[str, dict]:
    """The declared rules of a chapter's parameters (``parameter_rules`` of ``profiles.yml``: ``all``, then the
    chapter's own block): ``{name: {rule: value}}``. An unknown rule key is an error naming it."""
    declared = (profiles or {}).get("parameter_rules") or {}
    rules: dict[str, dict] = {}
    for block in ("all", chapter):
        for name, rule in (declared.get(block) or {}).items():
            if not isinstance(rule, Mapping) or set(rule) - set(RULE_KEYS):
                raise InputError(f"profiles.yml: parameter_rules.{block}.{name}: expected a mapping of "
                                 f"{', '.join(RULE_KEYS)}, got {rule!r}")
            rules[name] = {**rules.get(name, {}), **rule}
    return rules


def _rule_problem(value, rule: Mapping) -> str | None:
    """Why ``value`` (a list: each element) breaks ``rule`` (None when it does not)."""
    if isinstance(value, list):
        for item in value:
            reason = _rule_problem(item, rule)
            if reason is not None:
                return f"holds {_shown(item)}, which {reason}"
        return None
    if "choices" in rule:
        allowed = list(rule["choices"])
        if not any(value == c and type(value) is type(c) for c in allowed):
            return f"is not one of {allowed}"
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    for key, test, words in (("min", lambda v, b: v >= b, "at least"), ("max", lambda v, b: v <= b, "at most"),
                             ("above", lambda v, b: v > b, "above"), ("below", lambda v, b: v < b, "below")):
        if key in rule and number and not test(value, rule[key]):
            return f"is not {words} {rule[key]}"
    if "pattern" in rule and isinstance(value, str) and not re.fullmatch(rule["pattern"], value):
        return f"does not match {rule['pattern']!r}"
    return None


def check_rules(values: Mapping, rules: Mapping[str, Mapping], notebook: str | Path,
                origins: Mapping[str, str] | None = None) -> None:
    """Raise :class:`InputError` listing every value that breaks its declared rule (:func:`parameter_rules`),
    each naming where the value came from and what the rule allows; nothing has run yet."""
    origins = origins or {}
    problems = []
    for key, value in values.items():
        if key not in rules:
            continue
        reason = _rule_problem(value, rules[key])
        if reason is not None:
            origin = origins.get(key, "")
            label = f"-p {key}" if origin == "-p" else f"{key}{f' (from {origin})' if origin else ''}"
            problems.append(f"{label}: {_shown(value)} {reason} (profiles.yml parameter_rules: {dict(rules[key])})")
    name = Path(notebook).name
    if len(problems) == 1:
        raise InputError(f"{problems[0]}; {name} was not executed")
    if problems:
        raise InputError(f"{len(problems)} parameter values break the declared rules of {name}; nothing was "
                         "executed:\n  " + "\n  ".join(problems))
