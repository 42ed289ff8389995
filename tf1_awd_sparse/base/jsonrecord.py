"""Typed records of JSON files: a frozen object with one `Field` per key,
read from the dict JSON loads and given back key for key.

A subclass of `Record` declares its keys as `Field` class attributes, each
with the JSON type of its value and a docstring, the key's one definition
(the class's docstring lists them). ``Cls.from_json(obj, source)`` checks
a dict: a key without a default is required, a value of another type is
refused, each as a `RecordError` naming ``source`` (the file) and the key;
``Cls.read(path)`` reads the file. ``record.to_json()`` gives the dict
back with the keys it held, in their order, so that a file read and
written again keeps its content, keys no field declares included.
`config.runrecord`'s records of a training run's files are the users.
Imports nothing of TensorFlow.
"""
import json

from tf1_awd_sparse.base.errors import Error

__all__ = ["RecordError", "Field", "Record"]

_REQUIRED = object()


class RecordError(ValueError, Error):
    """A run's record (state.json, summary.json) that is not one: no JSON
    object, a key every version wrote missing, or a value of the wrong
    type; one line naming the file and the key. A ``ValueError`` and a
    `tf1_awd_sparse.Error`."""


#: The Python types of each JSON type a `Field` holds (an integer is a
#: number; true / false are no integer).
_TYPES = {int: (int,), float: (int, float), bool: (bool,), str: (str,),
          dict: (dict,), list: (list, tuple)}
_TYPE_NAMES = {int: "an integer", float: "a number", bool: "true or false",
               str: "a string", dict: "an object", list: "a list"}


def _to_json(value):
    """A record's value as a fresh JSON value (records as dicts, tuples as
    lists, containers copied)."""
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, dict):
        return {k: _to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    return value


class Field(object):
    """One key of a record, its only definition: the JSON type of its
    value, whether it may be null, the default of a record (of an older
    version) without it, and its docstring.

    Read as a record's attribute it gives the key's value (a list as a
    tuple; a list of records as a tuple of them), or its default when the
    record lacks the key. Records are frozen: assigning raises
    AttributeError (`Record.replace` makes a changed copy).

    Args:
      kind: int, float (an integer is accepted), bool, str, dict or list;
        or a `Record` subclass: a list of such records.
      doc: what the value is (its unit, when it is set).
      null: whether the value may be null (None).
      default: the value of a record without the key; omitted, the key is
        required (every version wrote it).
    """

    def __init__(self, kind, doc, null=False, default=_REQUIRED):
        self.kind, self.null, self.default = kind, null, default
        self.__doc__ = doc
        self.name = None

    def __set_name__(self, owner, name):
        self.name = name

    @property
    def required(self):
        """Whether a record must hold the key (it has no default)."""
        return self.default is _REQUIRED

    def __get__(self, record, owner=None):
        if record is None:
            return self
        return record._values.get(self.name, self.default)

    def __set__(self, record, value):
        raise AttributeError("%s.%s is read-only: make a changed copy with "
                             "replace(%s=...)" % (type(record).__name__,
                                                  self.name, self.name))

    def check(self, value, where):
        """``value`` as a record holds it: a list as a tuple, a list of
        records as a tuple of them (`Record.coerce`), an object copied.

        Raises:
          RecordError: a value of another type, named with ``where`` (the
            file) and the key.
        """
        if value is None and self.null:
            return None
        nested = isinstance(self.kind, type) and issubclass(self.kind, Record)
        kind = list if nested else self.kind
        if not isinstance(value, _TYPES[kind]) or (
                kind is not bool and isinstance(value, bool)):
            text = repr(value)
            raise RecordError("%s: key %r must be %s%s, got %s" % (
                where, self.name, _TYPE_NAMES[kind],
                " or null" if self.null else "",
                text if len(text) <= 40 else text[:37] + "..."))
        if nested:
            return tuple(self.kind.coerce(item, "%s: %s[%d]" % (
                where, self.name, i)) for i, item in enumerate(value))
        if kind in (list, dict):
            return tuple(value) if kind is list else _to_json(value)
        return value

    def describe(self):
        """The field's line of its record's docstring."""
        first = (self.__doc__ or "").strip()
        if self.required:
            return "%s: %s" % (self.name, first)
        return "%s: %s Absent: %r." % (self.name, first, self.default)


class Record(object):
    """A frozen record a run writes as a JSON object; a subclass declares
    one `Field` per key it reads.

    Build one with `from_json` (a dict loaded from a file), `read` (the
    file) or keywords (``EpochRecord(epoch=1, ...)``, the keys in the
    order given); `to_json` gives the dict back, key for key and in its
    order. Keys no field declares (``extra``: a summary's ``extra``
    entries, a newer version's keys) are kept as they are.
    """
    __slots__ = ("_values",)
    #: How messages name a record of the class.
    WHAT = "record"
    #: {key: `Field`} of the class, in declaration order (set for each
    #: subclass).
    FIELDS = {}

    def __init_subclass__(cls, **kwargs):
        super(Record, cls).__init_subclass__(**kwargs)
        fields = {}
        for klass in reversed(cls.__mro__):
            fields.update((name, value) for name, value in vars(klass).items()
                          if isinstance(value, Field))
        cls.FIELDS = fields
        if cls.__doc__:   # None under python -OO
            cls.__doc__ += "\n    Fields (`Field`; the record's keys):\n\n" \
                + "\n".join("      " + f.describe()
                            for f in fields.values()) + "\n"

    def __init__(self, **values):
        self._values = self._checked(values, type(self).__name__)

    @classmethod
    def _checked(cls, obj, where):
        """``obj``'s values as the record holds them (`Field.check`).

        Raises:
          RecordError: no dict, a required key missing, a value of the
            wrong type; named with ``where`` and the key.
        """
        if not isinstance(obj, dict):
            raise RecordError("%s: expected %s (a JSON object), got %s" % (
                where, cls.WHAT, type(obj).__name__))
        for name, field in cls.FIELDS.items():
            if field.required and name not in obj:
                doc = (field.__doc__ or "").strip().rstrip(".")
                raise RecordError("%s: missing key %r of %s (%s)" % (
                    where, name, cls.WHAT, doc[:1].lower() + doc[1:]))
        return {key: cls.FIELDS[key].check(value, where)
                if key in cls.FIELDS else value
                for key, value in obj.items()}

    @classmethod
    def from_json(cls, obj, source=None):
        """The record of ``obj``, a dict as JSON loads it.

        Args:
          obj: dict.
          source: where it came from (the file), naming it in errors
            (default: `WHAT`).

        Raises:
          RecordError: ``obj`` is no dict, lacks a required key, or holds a
            value of the wrong type; named with ``source`` and the key.
        """
        record = cls.__new__(cls)
        record._values = cls._checked(obj, source or cls.WHAT)
        return record

    @classmethod
    def read(cls, path):
        """The record of the JSON file ``path``.

        Raises:
          RecordError: the file cannot be read or is not JSON, or is no
            such record (`from_json`); named.
        """
        try:
            with open(path) as handle:
                obj = json.load(handle)
        except (IOError, OSError, ValueError) as e:
            raise RecordError("%s: unreadable (%s)" % (path, e))
        return cls.from_json(obj, path)

    @classmethod
    def coerce(cls, value, source=None):
        """``value`` itself when it is a record of the class, else
        `from_json` of it."""
        return value if isinstance(value, cls) else cls.from_json(value,
                                                                  source)

    def to_json(self):
        """The record as a dict of JSON values (a fresh copy): the keys it
        holds, in their order, so that a file read and written again
        keeps its content."""
        return {k: _to_json(v) for k, v in self._values.items()}

    def replace(self, **changes):
        """A copy with ``changes`` (checked): a key it holds keeps its
        place, a new one comes last (as a dict's update).

        Raises:
          RecordError: a value of the wrong type (named).
        """
        values = dict(self._values)
        values.update(changes)
        record = type(self).__new__(type(self))
        record._values = self._checked(values, "%s.replace" % (
            type(self).__name__))
        return record

    def holds(self, key):
        """Whether the record holds ``key`` itself (not its default)."""
        return key in self._values

    @property
    def extra(self):
        """{key: value} of the keys no field declares."""
        return {k: v for k, v in self._values.items()
                if k not in self.FIELDS}

    def __eq__(self, other):
        return type(other) is type(self) and other._values == self._values

    def __ne__(self, other):
        return not self == other

    __hash__ = None

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % item for item in self._values.items()))
