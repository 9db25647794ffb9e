"""``kjoin.records``' rules for JSON values, written as Spark expressions: a value's text parsed, shown as the trace
shows it, a field of it taken as a key, two values joined by the default joiner, without a Python worker.

The reference engine decodes a JSON value (:func:`kjoin.records.load_json`) and shows it with
:func:`kjoin.records.render_value`: a string bare, null as null, anything else as
``json.dumps(value, sort_keys=True, separators=(",", ":"))`` (``ensure_ascii``: every character outside space..``~``
escaped). Spark's ``VARIANT`` comes close: ``try_parse_json`` keeps an object's fields sorted by name and ``to_json``
writes them compactly in that order. It differs on some texts, so each expression here comes with :func:`exact`, true
where its result is the reference engine's, by these rules (``tests/test_spark_json_text.py`` checks them on random
values, and that :func:`exact` holds on every value outside them):

==============================  =============================================  ============================
the text has                    Python                                         ``VARIANT``
==============================  =============================================  ============================
a fraction or an exponent       ``2.0``, ``1e-07``, ``-0.0`` (floats)          ``2``, ``1.0E-7``, ``0``
an integer of 39+ digits        the integer                                    a double
a character outside space..~    escaped (``\\u00e9``, ``\\u007f``)              written as it is
a repeated field name           the last one wins                              no value (``try_parse_json``)
text that is not JSON           an error naming the record                     no value
==============================  =============================================  ============================

A text where :func:`exact` is false needs the reference engine's own decoding (the chain pass in Python);
:mod:`kjoin.spark.passes.stage_expressions` says how a stage uses these expressions.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

__all__ = ["parsed", "shown", "exact", "field", "field_path", "concat_joined", "FieldPathError"]


class FieldPathError(ValueError):
    """A field path (``a.b``) whose parts a ``VARIANT`` path cannot name exactly (empty, or with ``'``, ``[``, ``]``
    or ``\\``): such a key selector stays in Python."""


_STRINGS = r'"(?:[^"\\]|\\.)*"'
"""A JSON string literal, escapes included (Java regular expression)."""


def parsed(text: Column | str) -> Column:
    """A JSON text as a ``VARIANT`` (null where Spark cannot parse it: not JSON, or a field name repeated)."""
    return F.try_parse_json(text)


def shown(value: Column) -> Column:
    """A ``VARIANT`` as :func:`kjoin.records.render_value` shows the decoded value, null for JSON null (a null
    value): a string bare, anything else compact JSON with its fields sorted."""
    text = F.to_json(value)
    return (
        F.when(value.isNull() | F.is_variant_null(value), F.lit(None).cast("string"))
        .when(text.startswith('"'), F.variant_get(value, "$", "string"))
        .otherwise(text)
    )


def exact(text: Column | str, value: Column) -> Column:
    """True where :func:`shown` of ``value`` (``parsed(text)``), and of any field of it (:func:`field`), is what the
    reference engine shows (the module's table): ``text`` is null, or it parsed, its numbers are integers of at
    most 38 digits, its rendering is printable ASCII without ``\\u`` escapes, and it is no string that starts like
    an object (the reference reads a field of a JSON object's text: ``kjoin.topology.functions.as_read``)."""
    text = F.col(text) if isinstance(text, str) else text
    outside_strings = F.regexp_replace(text, _STRINGS, "")
    rendered = F.to_json(value)
    plain = (
        value.isNotNull()
        & ~outside_strings.rlike(r"[0-9][.eE]|[0-9]{39}")
        & rendered.rlike(r"^[ -~]*$")
        & ~rendered.contains("\\u")
        & ~F.ltrim(text).startswith('"{')
    )
    return text.isNull() | F.coalesce(plain, F.lit(False))


def field_path(path: str) -> str:
    """A field path as ``kjoin.topology.functions.field_of`` reads it (``a.b``: field ``b`` of field ``a``) as a
    ``VARIANT`` path (``$['a']['b']``: object fields only, as ``field_of`` reads an object's fields only)."""
    parts = path.split(".")
    for part in parts:
        if not part or any(c in part for c in "'[]\\"):
            raise FieldPathError(
                f"field path {path!r}: part {part!r} cannot be named in a VARIANT path (empty, or with ' [ ] \\)"
            )
    return "$" + "".join(f"['{part}']" for part in parts)


def field(value: Column, path: str) -> Column:
    """``select_key({"field": path})``'s key: the field's text (``kjoin.topology.functions``: a string bare, null
    when missing, null or not reached through objects, anything else its JSON as the trace shows it)."""
    return shown(F.try_variant_get(value, field_path(path), "variant"))


def concat_joined(left: Column, right: Column) -> Column:
    """The default joiner (:func:`kjoin.joins.context.default_joiner`, ``left-right``) over two values as shown
    (null shown as ``null``)."""
    return F.concat(F.coalesce(left, F.lit("null")), F.lit("-"), F.coalesce(right, F.lit("null")))
