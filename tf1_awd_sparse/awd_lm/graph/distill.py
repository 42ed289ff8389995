"""Knowledge distillation from the float model during a fine-tuning.

A training run with ``params.distill.distill_weight > 0`` (the compression
pipeline's technique phases, `awd_lm.training.compression`) also computes a
*teacher*'s logits on the same input windows: the same architecture as the
student in evaluation mode (no dropout, float: no sparsity, no pruning
mask, no quantization), its variables under the scope ``teacher/``,
restored from the checkpoint ``params.stage.distill_from`` (the float model's
best) and never trained. Its recurrent state is carried across the BPTT
windows and reset with the student's (`train.train_epoch`).

The training loss becomes::

    xent + ar + tar + weight_decay + sparsity_loss
      + distill_weight * T^2 * mean_tokens CE(softmax(t / T), softmax(s / T))

with ``t`` / ``s`` the teacher's / student's logits and ``T`` the
temperature ``params.distill.distill_temperature``; the cross-entropy equals
the KL divergence ``KL(p_T || q_T)`` plus the teacher's entropy, which does
not depend on the student. The factor ``T^2`` keeps the gradient's scale
independent of ``T`` (Hinton et al. 2015).

The teacher's variables are local variables (``tf.GraphKeys.
LOCAL_VARIABLES``): not in ``tf.global_variables()`` (so not in the
model's Savers: the student's checkpoints hold exactly what they hold
without distillation) nor in ``tf.trainable_variables()``.
"""
import collections

from tf1_awd_sparse.base.scalar_checks import check_real
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.awd_lm.config.params import takes_params
from tf1_awd_sparse.awd_lm.graph import model

__all__ = ["TEACHER_SCOPE", "Teacher", "enabled", "teacher_params",
           "build_teacher", "distill_terms"]

#: Variable scope of the teacher's copy of the model (``teacher/lm/...``).
TEACHER_SCOPE = "teacher"

Teacher = collections.namedtuple("Teacher", [
    "logits", "state", "final_state", "variables"])
Teacher.__doc__ = """What `build_teacher` returns.

Fields:
  logits: float32 [batch, time, vocab], the teacher's logits behind
    ``tf.stop_gradient``.
  state: tuple of LSTMStateTuple(c, h) placeholders ``teacher_c<i>`` /
    ``teacher_h<i>``, [batch, units] each: the carried state to feed.
  final_state: the teacher's state after the window (feed it back).
  variables: {checkpoint name (``lm/...``): teacher variable}, the mapping
    a ``tf.train.Saver`` restores ``distill_from`` with.
"""


def enabled(params):
    """Whether a run distils: ``params.distill.distill_weight > 0`` (which
    `model.check_params` refuses without ``params.stage.distill_from``).

    Args:
      params: the run's parameters (`config.params.Params`).
    """
    return float(params.distill.distill_weight) > 0.0


def teacher_params(params):
    """The teacher's parameters: the student's architecture as the float
    model it was fine-tuned from (no sparsity, pruning mask, quantization,
    held masks or distillation of its own).

    Args:
      params: the student's parameters (`config.params.Params`).

    Returns:
      a `config.params.Params`.
    """
    return params.replace(
        sparsity=None, sparsity_weight=None, sparsity_ramp_steps=0,
        sparsity_controller=None, pruning=None, quant=False, use_vd=False,
        distill_weight=0.0, distill_from=None)


def _make_local(graph, variables):
    """Moves ``variables`` from every collection of ``graph`` to
    ``LOCAL_VARIABLES`` only."""
    ids = set(id(v) for v in variables)
    for key in graph.get_all_collection_keys():
        held = graph.get_collection_ref(key)
        held[:] = [item for item in held if id(item) not in ids]
    for variable in variables:
        graph.add_to_collection(tf.GraphKeys.LOCAL_VARIABLES, variable)


@takes_params()
def build_teacher(inputs, targets, params):
    """Builds the teacher on the student's input windows (see the module
    docstring). Call in the training graph, after the student.

    Args:
      inputs, targets: int32 [batch, time] tensors (the student's).
      params: the student's parameters (`teacher_params` derives the
        teacher's).

    Returns:
      `Teacher`.

    Raises:
      ValueError: bad params (named, `model.build_lm`).
    """
    graph = tf.get_default_graph()
    before = set(v.op.name for v in tf.global_variables())
    state = tuple(
        tf.nn.rnn_cell.LSTMStateTuple(
            tf.placeholder(tf.float32, [None, n], "teacher_c%d" % i),
            tf.placeholder(tf.float32, [None, n], "teacher_h%d" % i))
        for i, n in enumerate(model.layer_sizes(params)))
    with tf.variable_scope(TEACHER_SCOPE):
        out = model.build_lm({"inputs": inputs, "targets": targets,
                              "state": state}, False, teacher_params(params))
    created = [v for v in tf.global_variables()
               if v.op.name not in before]
    _make_local(graph, created)
    prefix = TEACHER_SCOPE + "/"
    names = {v.op.name[len(prefix):]: v for v in created}
    return Teacher(tf.stop_gradient(out.logits), state, out.final_state,
                   names)


def distill_terms(student_logits, teacher_logits, temperature):
    """The distillation term and the KL divergence it stands for.

    Args:
      student_logits, teacher_logits: float32 [..., vocab] of one shape.
      temperature: float > 0, ``T``.

    Returns:
      ``(term, kl)``: float32 scalars, ``term = T^2 * mean over tokens of
      -sum_v softmax(t / T)_v * log_softmax(s / T)_v`` (the loss's
      addition before ``distill_weight``) and ``kl`` the mean over tokens
      of ``KL(softmax(t / T) || softmax(s / T))`` (nats, no ``T^2``).
      The teacher's logits get ``tf.stop_gradient``.

    Raises:
      ValueError: a temperature that is not a finite number > 0.
    """
    t = check_real(temperature, "temperature", low=0.0, low_open=True)
    log_p = tf.nn.log_softmax(tf.stop_gradient(teacher_logits) / t)
    log_q = tf.nn.log_softmax(student_logits / t)
    p = tf.exp(log_p)
    xent = -tf.reduce_sum(p * log_q, -1)
    kl = tf.reduce_sum(p * (log_p - log_q), -1)
    return (tf.multiply(t * t, tf.reduce_mean(xent), name="distill_term"),
            tf.reduce_mean(kl, name="distill_kl"))
