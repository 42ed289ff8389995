"""The plumbing of a layer that runs one RNN cell over whole sequences:
its variable scope (unique by default, fixed by the first call) and its
variables (the cell's), apart from what the layer computes.

Why not ``tf.compat.v1.layers.Layer``: tried on the four supported
versions, it changes what the layer promises. It opens a scope of its own
(``<layer name>/rnn/lstm_cell/kernel``, not ``rnn/lstm_cell/kernel``), its
``variables`` leave out the cell's on TF 1.15 and 2.x (``[]``; only 1.13
tracks the cell), and a call's ``scope=`` no longer places that call's
ops (the base layer fixes one scope at the first call). Keeping the names
and properties would mean overriding them all, which is this class.
"""
from __future__ import absolute_import, division, print_function

import contextlib

from tf1_awd_sparse.base.compat import tf


def check_scope(scope, arg_name):
    """A variable scope argument: None, a non-empty string or a
    ``tf.VariableScope``, returned as given.

    Raises:
      ValueError: anything else, naming ``arg_name``.
    """
    if scope is None or isinstance(scope, tf.VariableScope) or (
            isinstance(scope, str) and scope):
        return scope
    raise ValueError("%s must be None, a non-empty string or a "
                     "tf.VariableScope, got %r" % (arg_name, scope))


class SequenceLayerBase(object):
    """A layer over one RNN cell that holds its variables.

    The layer's variables are its cell's; they live in the layer's variable
    scope, which is the one the first call (or :meth:`_variable_scope`
    before it) enters: the constructor's ``scope`` if given, else a unique
    ``rnn``, ``rnn_1``... in the enclosing scope (``tf.layers``' naming,
    ``dynamic_rnn``'s default name), and which later calls reenter.

    Args:
      make_cell: a function of no arguments returning the cell (a
        ``tf.nn.rnn_cell.RNNCell``), called once, after ``scope`` is
        checked.
      scope: None, a non-empty string or a ``tf.VariableScope``.

    Raises:
      ValueError: a ``scope`` of another kind; whatever ``make_cell``
        raises.
    """

    _default_scope_name = "rnn"

    def __init__(self, make_cell, scope=None):
        self._scope = check_scope(scope, "scope")
        # The variable scope first entered: where the variables are,
        # reentered by later calls.
        self._built_scope = None
        self._cell = make_cell()

    @property
    def cell(self):
        """The cell holding the variables."""
        return self._cell

    @property
    def built(self):
        """True once a call created the variables."""
        return self._cell.built

    @property
    def scope_name(self):
        """The name of the layer's variable scope (a string; None before
        the scope is first entered)."""
        return None if self._built_scope is None else self._built_scope.name

    @property
    def variables(self):
        """Every variable of the layer (its cell's), trainable ones first,
        in the order the cell created them; ``[]`` before the first
        call."""
        return self._cell.weights

    @property
    def trainable_variables(self):
        """The layer's trainable variables."""
        return self._cell.trainable_weights

    @property
    def non_trainable_variables(self):
        """The layer's non-trainable variables (masks, ranges...)."""
        return self._cell.non_trainable_weights

    @property
    def weights(self):
        """The cell's variables (as :attr:`variables`)."""
        return self._cell.weights

    @contextlib.contextmanager
    def _variable_scope(self, scope):
        """Enters the scope of a call: ``scope`` if given, else the one
        first entered, else the constructor's, else a new unique ``rnn`` /
        ``rnn_<n>`` (uniquified by ``default_name``). The first one
        entered is recorded as the layer's.

        Yields:
          The ``tf.VariableScope`` entered.

        Raises:
          ValueError: a ``scope`` that is not None, a non-empty string or a
            ``tf.VariableScope``.
        """
        scope = check_scope(scope, "scope")
        if scope is None:
            scope = self._built_scope or self._scope
        with tf.variable_scope(
                scope, default_name=self._default_scope_name) as varscope:
            if self._built_scope is None:
                self._built_scope = varscope
            yield varscope
