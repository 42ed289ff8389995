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
from tf1_awd_sparse.base.compat import tf

from tf1_awd_sparse.base import _docs
from tf1_awd_sparse.ops.sparse import common
from tf1_awd_sparse.ops.sparse import layer_utils
from tf1_awd_sparse.ops.sparse.common import (
    BETA, EPSILON, GAMMA, ZETA, check_sparse_options)
from tf1_awd_sparse.base.checks import check_tensor

__all__ = ["train_weights", "eval_weights", "matmul_train", "matmul_eval",
           "broadcast_matmul_train", "broadcast_matmul_eval", "conv2d_train",
           "conv2d_eval", "embedding_lookup_train", "embedding_lookup_eval",
           "l0_norm"]

_PARAMS = "weight_parameters"


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
      ParamsError (a ValueError): malformed `weight_parameters` (shapes
        named).
      ValueError, TypeError: as for the VD op (rank, size and dtype of x,
        data_format, padding, strides, ids); `beta <= 0`, `gamma >= 0`,
        `zeta <= 1` or any of them not a finite number.
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
      ParamsError (a ValueError): malformed `weight_parameters`.
      ValueError: `beta <= 0`, `gamma >= 0`, `zeta <= 1`, `eps <= 0`, or
        any of them not a finite number.
    """
    theta, log_alpha = _train_params(weight_parameters, beta, gamma, zeta,
                                     eps)
    return theta * common.hard_concrete_sample(log_alpha, beta, gamma, zeta,
                                               eps)


def _train_params(weight_parameters, beta, gamma, zeta, eps, rank=None):
    check_sparse_options(beta=beta, gamma=gamma, zeta=zeta, eps=eps)
    return layer_utils.check_params(weight_parameters, _PARAMS, rank)


def _eval_params(weight_parameters, gamma, zeta, rank=None):
    check_sparse_options(gamma=gamma, zeta=zeta)
    return layer_utils.check_params(weight_parameters, _PARAMS, rank)


def eval_weights(weight_parameters, gamma=GAMMA, zeta=ZETA):
    """theta * hard_concrete_mean(log_alpha), the deterministic weights.

    Arguments (without beta and eps), result shape and errors as for
    `train_weights`.
    """
    theta, log_alpha = _eval_params(weight_parameters, gamma, zeta)
    return common.l0_eval_weights(theta, log_alpha, gamma, zeta)


@_docs.append(_TRAIN)
def matmul_train(x, weight_parameters, transpose_a=False, transpose_b=False,
                 beta=BETA, gamma=GAMMA, zeta=ZETA, eps=EPSILON, name=None):
    """Training-time `x @ (theta * z)`, z ~ hard-concrete, one per weight."""
    with tf.name_scope(name, "l0_matmul_train", [x]):
        params = _train_params(weight_parameters, beta, gamma, zeta, eps, 2)
        x = layer_utils.check_matmul_input(
            x, params[0], transpose_a, transpose_b, _PARAMS)
        return tf.matmul(x, train_weights(params, beta, gamma, zeta, eps),
                         transpose_a=transpose_a, transpose_b=transpose_b)


@_docs.append(_EVAL)
def matmul_eval(x, weight_parameters, transpose_a=False, transpose_b=False,
                gamma=GAMMA, zeta=ZETA, name=None):
    """Evaluation-time `x @ (theta * hard_concrete_mean(log_alpha))`."""
    with tf.name_scope(name, "l0_matmul_eval", [x]):
        params = _eval_params(weight_parameters, gamma, zeta, 2)
        x = layer_utils.check_matmul_input(
            x, params[0], transpose_a, transpose_b, _PARAMS)
        return tf.matmul(x, eval_weights(params, gamma, zeta),
                         transpose_a=transpose_a, transpose_b=transpose_b)


@_docs.append(_TRAIN)
def broadcast_matmul_train(x, weight_parameters, beta=BETA, gamma=GAMMA,
                           zeta=ZETA, eps=EPSILON, name=None):
    """`matmul_train` for x of rank >= 2, contracted on its last axis."""
    with tf.name_scope(name, "l0_broadcast_matmul_train", [x]):
        params = _train_params(weight_parameters, beta, gamma, zeta, eps, 2)
        x = layer_utils.check_input(x, params[0], -1, _PARAMS, min_rank=2)
        return layer_utils.broadcast_matmul(
            x, train_weights(params, beta, gamma, zeta, eps))


@_docs.append(_EVAL)
def broadcast_matmul_eval(x, weight_parameters, gamma=GAMMA, zeta=ZETA,
                          name=None):
    """`matmul_eval` for x of rank >= 2, contracted on its last axis."""
    with tf.name_scope(name, "l0_broadcast_matmul_eval", [x]):
        params = _eval_params(weight_parameters, gamma, zeta, 2)
        x = layer_utils.check_input(x, params[0], -1, _PARAMS, min_rank=2)
        return layer_utils.broadcast_matmul(x, eval_weights(params, gamma,
                                                            zeta))


@_docs.append(_TRAIN)
def conv2d_train(x, weight_parameters, strides, padding, data_format="NHWC",
                 beta=BETA, gamma=GAMMA, zeta=ZETA, eps=EPSILON, name=None):
    """Training-time conv2d with theta * z, z ~ hard-concrete per weight."""
    with tf.name_scope(name, "l0_conv2d_train", [x]):
        params = _train_params(weight_parameters, beta, gamma, zeta, eps, 4)
        x = layer_utils.check_conv_input(x, params[0], data_format,
                                         _PARAMS)
        return layer_utils.conv2d(
            x, train_weights(params, beta, gamma, zeta, eps), strides,
            padding, data_format)


@_docs.append(_EVAL)
def conv2d_eval(x, weight_parameters, strides, padding, data_format="NHWC",
                gamma=GAMMA, zeta=ZETA, name=None):
    """Evaluation-time conv2d with theta * hard_concrete_mean(log_alpha)."""
    with tf.name_scope(name, "l0_conv2d_eval", [x]):
        params = _eval_params(weight_parameters, gamma, zeta, 4)
        x = layer_utils.check_conv_input(x, params[0], data_format,
                                         _PARAMS)
        return layer_utils.conv2d(x, eval_weights(params, gamma, zeta),
                                  strides, padding, data_format)


@_docs.append(_TRAIN)
def embedding_lookup_train(weight_parameters, ids, name=None, beta=BETA,
                           gamma=GAMMA, zeta=ZETA, eps=EPSILON):
    """Training-time lookup: gathered theta times gates sampled after
    the gather, one per looked-up element (cost scales with ids, not
    vocabulary).
    """
    with tf.name_scope(name, "l0_embedding_lookup_train", [ids]):
        return train_weights(layer_utils.gather_pair(
            _train_params(weight_parameters, beta, gamma, zeta, eps), ids,
            _PARAMS), beta, gamma, zeta, eps)


@_docs.append(_EVAL)
def embedding_lookup_eval(weight_parameters, ids, name=None, gamma=GAMMA,
                          zeta=ZETA):
    """Evaluation-time lookup: gathered theta * hard_concrete_mean."""
    with tf.name_scope(name, "l0_embedding_lookup_eval", [ids]):
        return eval_weights(layer_utils.gather_pair(
            _eval_params(weight_parameters, gamma, zeta), ids, _PARAMS),
            gamma, zeta)


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

    Raises:
      TypeError: `log_alpha` not a float tensor.
      ValueError: `beta <= 0`, `gamma >= 0`, `zeta <= 1` or any of them
        not a finite number.
    """
    check_sparse_options(beta=beta, gamma=gamma, zeta=zeta)
    with tf.name_scope(name, "l0_norm", [log_alpha]):
        log_alpha = check_tensor(log_alpha, "log_alpha", kind="float")
        return tf.reduce_sum(common.hard_concrete_nonzero_probability(
            log_alpha, beta, gamma, zeta))
