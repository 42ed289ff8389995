"""Typed records of JSON files (base.jsonrecord): the checks of each
JSON type (an integer is a number, true is no integer), a nested list of
records, required keys and defaults, unknown keys kept in order, frozen
records and `replace`, and the file named in every refusal. The records of
a real run's files are tested in tests/awd_lm/config/test_runrecord.py."""
import json

import pytest

from tf1_awd_sparse.base.errors import Error
from tf1_awd_sparse.base.jsonrecord import Field, Record, RecordError

pytestmark = pytest.mark.per_python


class Point(Record):
    """A point."""
    __slots__ = ()
    WHAT = "a point"
    x = Field(float, "Its abscissa.")
    label = Field(str, "Its name.", null=True, default=None)


class Path(Record):
    """A path."""
    __slots__ = ()
    WHAT = "a path"
    points = Field(Point, "Its points, in order.")
    closed = Field(bool, "Whether it returns to its start.", default=False)
    steps = Field(int, "How many steps it took.")
    tags = Field(list, "Its tags.", default=())
    meta = Field(dict, "Anything else.", null=True, default=None)


@pytest.mark.parametrize("value,ok", [
    (1, True), (1.5, True), (True, False), ("1", False), (None, False)])
def test_a_number_is_an_int_or_a_float_never_a_bool(value, ok):
    if ok:
        assert Point.from_json({"x": value}).x == value
    else:
        with pytest.raises(RecordError, match=r"^p.json: key 'x' must be a "
                                              r"number, got "):
            Point.from_json({"x": value}, "p.json")


@pytest.mark.parametrize("key,value,said", [
    ("steps", 2.0, "an integer"), ("steps", False, "an integer"),
    ("closed", 0, "true or false"), ("tags", "ab", "a list"),
    ("meta", [], "an object or null"), ("points", {}, "a list")])
def test_each_type_is_checked(key, value, said):
    obj = {"points": [], "steps": 1}
    obj[key] = value
    with pytest.raises(RecordError, match="key %r must be %s" % (key, said)):
        Path.from_json(obj, "path.json")


def test_nested_records_missing_keys_and_defaults():
    obj = {"steps": 2, "points": [{"x": 0}, {"x": 1.5, "label": "b"}],
           "note": "kept"}
    path = Path.from_json(obj, "path.json")
    assert [p.x for p in path.points] == [0, 1.5]
    assert path.points[1] == Point(x=1.5, label="b")
    assert (path.closed, path.tags, path.meta, path.points[0].label) == (
        False, (), None, None)
    assert path.extra == {"note": "kept"}
    assert path.to_json() == obj
    assert list(path.to_json()) == ["steps", "points", "note"]
    del obj["points"][1]["x"]
    with pytest.raises(RecordError) as error:
        Path.from_json(obj, "path.json")
    assert str(error.value) == ("path.json: points[1]: missing key 'x' of "
                                "a point (its abscissa)")
    with pytest.raises(RecordError, match="expected a path"):
        Path.from_json([obj], "path.json")
    assert isinstance(error.value, ValueError) and isinstance(error.value,
                                                              Error)


def test_frozen_and_replace():
    point = Point(x=1.0)
    with pytest.raises(AttributeError, match=r"replace\(x=\.\.\.\)"):
        point.x = 2.0
    with pytest.raises(AttributeError):
        point.other = 1
    moved = point.replace(x=2.0, label="m")
    assert (point.x, moved.x, moved.label) == (1.0, 2.0, "m")
    assert point != moved and moved == Point(x=2.0, label="m")
    assert point.holds("x") and not point.holds("label")
    with pytest.raises(RecordError, match="'x'"):
        point.replace(x="far")


def test_read_names_the_file(tmp_path):
    path = str(tmp_path / "p.json")
    with open(path, "w") as handle:
        handle.write("{")
    with pytest.raises(RecordError, match="^%s: unreadable" % path):
        Point.read(path)
    with open(path, "w") as handle:
        json.dump({"x": 3}, handle)
    assert Point.read(path) == Point(x=3)


def test_the_docstring_lists_each_field_once():
    if Path.__doc__ is None:   # python -OO
        return
    for key in Path.FIELDS:
        assert Path.__doc__.count("\n      %s: " % key) == 1, key
    assert "closed: Whether it returns to its start. Absent: False." \
        in Path.__doc__
