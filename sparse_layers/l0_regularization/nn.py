"""Stateless train/eval ops of L0 regularization with hard-concrete gates
(Louizos, Welling, Kingma 2018, "Learning Sparse Neural Networks through
L0 Regularization").

Parameters come as `weight_parameters = (theta, log_alpha)`: the weights
and the log-locations of their gates, two tensors of one shape.

Train ops multiply theta by one hard-concrete gate sample per weight (drawn
once per op call, shared across the batch); eval ops multiply theta by the
deterministic gate `hard_concrete_mean(log_alpha)` (scaled, not only
masked).
"""
import tensorflow as tf

from sparse_layers import _docs
from sparse_layers import common
from sparse_layers import layer_utils
from sparse_layers.common import BETA, EPSILON, GAMMA, ZETA


# The ops mirror sparse_layers.variational_dropout.nn argument for argument.
_MIRROR = """
    Args:
      x, ids, transpose_a, transpose_b, strides, padding, data_format, name:
        as for the op of the same name in
        `sparse_layers.variational_dropout.nn`.
      weight_parameters: (theta, log_alpha), tensors of one shape, the
        shape the VD op expects of its `variational_params`.
      %s

    Returns:
      the output of the VD op's shape%s.

    Raises:
      RuntimeError: malformed `weight_parameters` (shapes named).
      ValueError, TypeError: as for the VD op (rank of x, data_format, ids).
"""
_TRAIN = _MIRROR % ("beta, gamma, zeta: hard-concrete temperature and "
                    "stretch interval.\n      eps: keeps log(u) finite at "
                    "u = 0.", "")
_EVAL = _MIRROR % ("gamma, zeta: hard-concrete stretch interval.",
                   "; deterministic")


def train_weights(weight_parameters, beta=BETA, gamma=GAMMA, zeta=ZETA,
                  eps=EPSILON):
    """theta * z with z a fresh hard-concrete sample per weight.

    Args:
      weight_parameters: (theta, log_alpha), tensors of one shape.
      beta, gamma, zeta: hard-concrete temperature and stretch interval.
      eps: keeps log(u) finite at u = 0.

    Returns:
      tensor of theta's shape.

    Raises:
      RuntimeError: malformed `weight_parameters`.
    """
    theta, log_alpha = layer_utils.check_params(weight_parameters,
                                                "weight_parameters")
    return theta * common.hard_concrete_sample(log_alpha, beta, gamma, zeta,
                                               eps)


def eval_weights(weight_parameters, gamma=GAMMA, zeta=ZETA):
    """theta * hard_concrete_mean(log_alpha), the deterministic weights.

    Arguments (without beta and eps), result shape and errors as for
    `train_weights`.
    """
    theta, log_alpha = layer_utils.check_params(weight_parameters,
                                                "weight_parameters")
    return common.l0_eval_weights(theta, log_alpha, gamma, zeta)


def _checked(weight_parameters, rank):
    layer_utils.check_params(weight_parameters, "weight_parameters", rank)
    return weight_parameters


@_docs.append(_TRAIN)
def matmul_train(x, weight_parameters, transpose_a=False, transpose_b=False,
                 beta=BETA, gamma=GAMMA, zeta=ZETA, eps=EPSILON, name=None):
    """Training-time `x @ (theta * z)`, z ~ hard-concrete, one per weight."""
    with tf.name_scope(name, "l0_matmul_train", [x]):
        return tf.matmul(x, train_weights(weight_parameters, beta, gamma,
                                          zeta, eps),
                         transpose_a=transpose_a, transpose_b=transpose_b)


@_docs.append(_EVAL)
def matmul_eval(x, weight_parameters, transpose_a=False, transpose_b=False,
                gamma=GAMMA, zeta=ZETA, name=None):
    """Evaluation-time `x @ (theta * hard_concrete_mean(log_alpha))`."""
    with tf.name_scope(name, "l0_matmul_eval", [x]):
        return tf.matmul(x, eval_weights(weight_parameters, gamma, zeta),
                         transpose_a=transpose_a, transpose_b=transpose_b)


@_docs.append(_TRAIN)
def broadcast_matmul_train(x, weight_parameters, beta=BETA, gamma=GAMMA,
                           zeta=ZETA, eps=EPSILON, name=None):
    """`matmul_train` for x of rank >= 2, contracted on its last axis."""
    with tf.name_scope(name, "l0_broadcast_matmul_train", [x]):
        return layer_utils.broadcast_matmul(
            x, train_weights(_checked(weight_parameters, 2), beta, gamma,
                             zeta, eps))


@_docs.append(_EVAL)
def broadcast_matmul_eval(x, weight_parameters, gamma=GAMMA, zeta=ZETA,
                          name=None):
    """`matmul_eval` for x of rank >= 2, contracted on its last axis."""
    with tf.name_scope(name, "l0_broadcast_matmul_eval", [x]):
        return layer_utils.broadcast_matmul(
            x, eval_weights(_checked(weight_parameters, 2), gamma, zeta))


@_docs.append(_TRAIN)
def conv2d_train(x, weight_parameters, strides, padding, data_format="NHWC",
                 beta=BETA, gamma=GAMMA, zeta=ZETA, eps=EPSILON, name=None):
    """Training-time conv2d with theta * z, z ~ hard-concrete per weight."""
    with tf.name_scope(name, "l0_conv2d_train", [x]):
        return layer_utils.conv2d(
            x, train_weights(_checked(weight_parameters, 4), beta, gamma,
                             zeta, eps), strides, padding, data_format)


@_docs.append(_EVAL)
def conv2d_eval(x, weight_parameters, strides, padding, data_format="NHWC",
                gamma=GAMMA, zeta=ZETA, name=None):
    """Evaluation-time conv2d with theta * hard_concrete_mean(log_alpha)."""
    with tf.name_scope(name, "l0_conv2d_eval", [x]):
        return layer_utils.conv2d(
            x, eval_weights(_checked(weight_parameters, 4), gamma, zeta),
            strides, padding, data_format)


@_docs.append(_TRAIN)
def embedding_lookup_train(weight_parameters, ids, name=None, beta=BETA,
                           gamma=GAMMA, zeta=ZETA, eps=EPSILON):
    """Training-time lookup: gathered theta times gates sampled after
    the gather, one per looked-up element (cost scales with ids, not
    vocabulary).
    """
    with tf.name_scope(name, "l0_embedding_lookup_train", [ids]):
        return train_weights(_gathered(weight_parameters, ids), beta, gamma,
                             zeta, eps)


@_docs.append(_EVAL)
def embedding_lookup_eval(weight_parameters, ids, name=None, gamma=GAMMA,
                          zeta=ZETA):
    """Evaluation-time lookup: gathered theta * hard_concrete_mean."""
    with tf.name_scope(name, "l0_embedding_lookup_eval", [ids]):
        return eval_weights(_gathered(weight_parameters, ids), gamma, zeta)


def _gathered(weight_parameters, ids):
    theta, log_alpha = layer_utils.check_params(weight_parameters,
                                                "weight_parameters")
    return (layer_utils.gather(theta, ids),
            layer_utils.gather(log_alpha, ids))


def l0_norm(log_alpha, beta=BETA, gamma=GAMMA, zeta=ZETA, name=None):
    """Expected number of non-zero gates, the L0 penalty.

    sum(sigmoid(log_alpha - beta * log(-gamma / zeta))).

    Args:
      log_alpha: float tensor of gate log-locations, any shape.
      beta, gamma, zeta: hard-concrete temperature and stretch interval
        (gamma < 0 < zeta).
      name: optional name scope.

    Returns:
      float scalar tensor.
    """
    with tf.name_scope(name, "l0_norm", [log_alpha]):
        return tf.reduce_sum(common.hard_concrete_nonzero_probability(
            log_alpha, beta, gamma, zeta))
