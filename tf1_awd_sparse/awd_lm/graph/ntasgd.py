"""NT-ASGD: SGD that switches to iterate averaging on a non-monotone trigger.

Merity et al. 2017 (section 3): train with plain SGD; at each validation
check, if the validation loss is worse than the best of all checks except
the last `nonmono`, start averaging.  From then on the optimizer keeps the
running mean of every variable it updates (the average of the iterates
after each step from the switch on), and evaluation and checkpoints for
the best model use the averaged weights.
"""
import contextlib
import re

from tf1_awd_sparse.base.compat import tf

__all__ = ["is_slot_name", "nonmonotone_trigger", "NTASGDOptimizer"]


def is_slot_name(name, optimizer_name="NTASGD"):
    """Whether a checkpoint's variable name is one of an `NTASGDOptimizer`
    named ``optimizer_name``'s state: its slots (``<var>/NTASGD``, the
    average; ``<var>/NTASGD_1``, the swap backup) or its ``averaging`` /
    ``num_averaged`` switch."""
    return bool(re.search(r"/%s(_\d+)?$" % re.escape(optimizer_name), name)
                or name in ("averaging", "num_averaged"))


def nonmonotone_trigger(history, loss, nonmono=5):
    """The non-monotone criterion, as a pure function.

    Args:
      history: list of the validation losses of earlier checks (oldest
        first), not including `loss`.
      loss: float, this check's validation loss.
      nonmono: int >= 1, the number of recent checks left out of the
        comparison.
    Returns:
      bool: True when there are more than `nonmono` earlier checks and
      `loss` is greater than the smallest of all but the last `nonmono`.
    """
    return len(history) > nonmono and loss > min(history[:-nonmono])


class NTASGDOptimizer(tf.compat.v1.train.Optimizer):
    """Non-monotonically triggered averaged SGD as a TF1 optimizer.

    Before the trigger each step is ``var -= learning_rate * grad``.  The
    training loop calls `observe(sess, val_loss)` after each validation;
    once the non-monotone rule fires (see `nonmonotone_trigger`) the
    optimizer keeps, for every variable it updates, the running average of
    the variable's values after each later step (a slot ``average``).
    `averaged_weights(sess)` swaps the averages into the variables (and
    back out, bit-exactly, on exit), for evaluation and saving.

    The switch state (``averaging``), the number of averaged steps and the
    averages are variables, so `tf.train.Saver` checkpoints them; the list
    of observed validation losses is Python state in `history` (restore it
    after a resume with `set_history`).  `observe` and `averaged_weights`
    run their ops by name, so they also work in a session on a copy of the
    graph made with `tf.train.import_meta_graph`.
    """

    def __init__(self, learning_rate, nonmono=5, use_locking=False,
                 name="NTASGD"):
        """Creates the optimizer.

        Args:
          learning_rate: float or scalar float tensor (may change per step).
          nonmono: int >= 1, the trigger's window.
          use_locking: passed to the variable updates.
          name: name of the optimizer's ops and slots.
        Raises:
          ValueError: nonmono < 1.
        """
        super(NTASGDOptimizer, self).__init__(use_locking, name)
        if int(nonmono) != nonmono or nonmono < 1:
            raise ValueError("nonmono must be an int >= 1, got %r"
                             % (nonmono,))
        self._learning_rate = learning_rate
        self._nonmono = int(nonmono)
        self._sgd = tf.train.GradientDescentOptimizer(
            learning_rate, use_locking=use_locking, name=name + "_sgd")
        self._vars = None
        self._state = None
        self._swap_ops = None
        self._trigger_op = None
        self.history = []

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """One SGD step, then (when averaging) the running-average update.

        Args/Returns: as `tf.train.Optimizer.apply_gradients`.
        Raises:
          ValueError: called twice on one optimizer (it tracks one var list).
        """
        if self._vars is not None:
            raise ValueError("NTASGDOptimizer.apply_gradients: already "
                             "applied once; use one optimizer per train op")
        grads_and_vars = [(g, v) for g, v in grads_and_vars if g is not None]
        if not grads_and_vars:
            raise ValueError("grads_and_vars: no variable has a gradient")
        self._vars = [v for _, v in grads_and_vars]
        first = self._vars[0]
        with tf.init_scope():
            averaging = self._create_non_slot_variable(
                False, "averaging", first)
            count = self._create_non_slot_variable(
                0.0, "num_averaged", first)
            for v in self._vars:
                self._zeros_slot(v, "average", self._name)
                self._zeros_slot(v, "backup", self._name)
        self._state = (averaging, count)
        with tf.name_scope(name, self._name) as scope:
            step = self._sgd.apply_gradients(grads_and_vars, global_step)
            with tf.control_dependencies([step]):
                # Before the trigger the average is not touched at all
                # (issue 57: its update, a no-op times 0, read and wrote
                # every weight each step); after it, the same arithmetic
                # as always.
                done = tf.cond(averaging, lambda: self._average(count),
                               lambda: tf.identity(count))
            train_op = tf.group(done, name=scope)
        # Built now so they also work on a finalized graph.
        with tf.control_dependencies(None):
            self.trigger_op()
            self.swap_ops()
        return train_op

    def _average(self, count):
        """The running-average update of every variable and of the count,
        after a step (run only while averaging): the count's new value."""
        new_count = count + 1.0
        updates = []
        for v in self._vars:
            avg = self.get_slot(v, "average")
            # 1/k in the variable's own precision.
            dtype = avg.dtype.base_dtype
            rate_v = tf.cast(1.0, dtype) / tf.cast(
                tf.maximum(new_count, 1.0), dtype)
            updates.append(tf.assign_add(
                avg, rate_v * (v - avg), use_locking=self._use_locking))
        with tf.control_dependencies(updates):
            return tf.identity(tf.assign(count, new_count))

    def _require_applied(self, what):
        if self._vars is None:
            raise ValueError("NTASGDOptimizer.%s: call minimize or "
                             "apply_gradients first" % what)

    @property
    def averaging(self):
        """The boolean variable that is True once averaging has started."""
        self._require_applied("averaging")
        return self._state[0]

    @property
    def num_averaged(self):
        """The float variable counting the steps averaged so far."""
        self._require_applied("num_averaged")
        return self._state[1]

    def trigger_op(self):
        """The op that switches averaging on (built once, reused)."""
        self._require_applied("trigger_op")
        if self._trigger_op is None:
            self._trigger_op = tf.assign(self._state[0], True,
                                         name=self._name + "_trigger")
        return self._trigger_op

    def set_history(self, history):
        """Replaces the observed validation losses (e.g. after a resume)."""
        self.history = [float(x) for x in history]

    def observe(self, sess, val_loss):
        """Records a validation loss and switches to averaging if due.

        Args:
          sess: the session holding the optimizer's variables.
          val_loss: float.
        Returns:
          bool: True if this call switched averaging on.
        """
        fire = (not sess.run(self.averaging.name)
                and nonmonotone_trigger(self.history, val_loss,
                                        self._nonmono))
        self.history.append(float(val_loss))
        if fire:
            sess.run(self.trigger_op().name)
        return fire

    def swap_ops(self):
        """(swap_in, swap_out) ops, built once.

        swap_in saves each variable into its ``backup`` slot and, when
        averaging is on, loads the average into it; swap_out restores the
        backup exactly.  Before the switch swap_in leaves values unchanged.
        """
        self._require_applied("swap_ops")
        if self._swap_ops is None:
            averaging = self._state[0]
            with tf.name_scope(self._name + "_swap"):
                saves, loads, restores = [], [], []
                for v in self._vars:
                    backup = self.get_slot(v, "backup")
                    saves.append(tf.assign(backup, v))
                with tf.control_dependencies(saves):
                    for v in self._vars:
                        avg = self.get_slot(v, "average")
                        backup = self.get_slot(v, "backup")
                        loads.append(tf.assign(v, tf.cond(
                            averaging, lambda a=avg: tf.identity(a),
                            lambda b=backup: tf.identity(b))))
                for v in self._vars:
                    restores.append(tf.assign(v, self.get_slot(v, "backup")))
                self._swap_ops = (tf.group(loads, name="swap_in"),
                                  tf.group(restores, name="swap_out"))
        return self._swap_ops

    @contextlib.contextmanager
    def averaged_weights(self, sess):
        """Context manager: the averaged weights are in place inside it.

        Usage::

            with opt.averaged_weights(sess):
                evaluate(); saver.save(sess, path)
        """
        swap_in, swap_out = self.swap_ops()
        sess.run(swap_in.name)
        try:
            yield
        finally:
            sess.run(swap_out.name)
