"""What the sparse techniques' tests share: numpy references of their
math, random `(theta, aux)` pairs, the check of an evaluation op against
the dense op on its weights, and a small model of registered pairs (the
losses' and the sparsity report's tests read them from the
collections)."""
import numpy as np
import tensorflow.compat.v1 as tf

from sparse_layers import common, techniques
from sparse_layers.l0_regularization import layers as l0_layers
from sparse_layers.variational_dropout import layers as vd_layers
from support.references import sigmoid
from support.tolerances import conv2d_atol, matmul_atol

EPS = common.EPSILON


def registered_sparse_model(sess, rng):
    """Two VD layers, one L0 layer and a hand-made L0 pair (as a cell
    user would register); returns {name: (theta, aux) numpy values}."""
    x = tf.zeros([2, 4, 4, 2])
    vd_layers.Conv2D(3, 2, name="vd_conv")(x)
    vd_layers.FullyConnected(5, name="vd_fc")(tf.zeros([2, 6]))
    l0_layers.FullyConnected(3, name="l0_fc")(tf.zeros([2, 6]))
    with tf.variable_scope("cell"):
        pair = (tf.get_variable("w", [7, 8]),
                tf.get_variable("w_log_alpha", [7, 8]))
    techniques.register_pair("l0", pair)
    techniques.register_pair("l0", pair)  # no double count
    sess.run(tf.global_variables_initializer())
    values = {}
    for technique in ("variational_dropout", "l0"):
        values.update(randomize_pairs(
            sess, technique, techniques.registered_pairs(technique), rng))
    return values


#: Ranges of the auxiliary values (log sigma^2, log alpha) that zero part
#: of the weights, by technique.
AUX_RANGES = {"variational_dropout": (-3., 6.), "l0": (-4., 2.)}


def np_eval_weights(technique, theta, aux):
    """The evaluation weights of a pair (the papers' formulas, numpy): VD
    keeps theta where log(alpha) (in float64) is below 3, L0 scales it by
    its gate's test-time value."""
    if technique == "variational_dropout":
        log_alpha = aux - np.log(theta.astype(np.float64) ** 2 + 1e-8)
        return theta * (log_alpha < 3.0)
    return theta * np.clip(sigmoid(aux) * 1.2 - 0.1, 0., 1.)


def embedding_pair(technique, name="emb", shape=(7, 5), use_resource=True):
    """An embedding-style pair ``<name>`` / ``<name>_<aux>`` of new
    variables, registered with ``technique``."""
    aux_name = techniques.get(technique).aux_name
    pair = tuple(tf.get_variable(n, shape, use_resource=use_resource)
                 for n in (name, "%s_%s" % (name, aux_name)))
    techniques.register_pair(technique, pair)
    return pair


def randomize_pairs(sess, technique, pairs, rng):
    """Assigns random theta (standard normal) and aux (uniform over
    `AUX_RANGES`) values to ``pairs``; returns {theta name: (theta,
    aux)} numpy float32 values."""
    values = {}
    for theta, aux in pairs:
        value = (rng.randn(*theta.shape.as_list()).astype(np.float32),
                 rng.uniform(*AUX_RANGES[technique],
                             size=aux.shape.as_list()).astype(np.float32))
        sess.run([theta.assign(value[0]), aux.assign(value[1])])
        values[theta.op.name] = value
    return values


def np_log_alpha(log_sigma2, theta):
    """log(alpha) = log(sigma^2) - log(theta^2 + eps), numpy."""
    return log_sigma2 - np.log(theta ** 2 + EPS)


def np_mean_gate(log_alpha):
    """The L0 gate's test-time value clip(sigmoid(log_alpha) (zeta -
    gamma) + gamma, 0, 1), numpy."""
    return np.clip(sigmoid(log_alpha) * (common.ZETA - common.GAMMA)
                   + common.GAMMA, 0., 1.)


def random_pair(rng, shape, log_sigma2_mean=-2.):
    """A float32 ``(theta, aux)`` of ``shape``: standard normal weights,
    aux normal around ``log_sigma2_mean`` with deviation 2."""
    theta = rng.randn(*shape).astype(np.float32)
    aux = (log_sigma2_mean + 2. * rng.randn(*shape)).astype(np.float32)
    return theta, aux


def vd_masked(theta, log_sigma2, threshold=common.THRESHOLD):
    """Sparse VD's evaluation weights: theta where log(alpha) is below
    ``threshold``, else 0."""
    return theta * (np_log_alpha(log_sigma2, theta) < threshold)


def check_eval_outputs(got, x, x3, weights, conv_ref, lookup_ref, images,
                       filters, weight_atol=0.0):
    """got = [matmul, transposed matmul, broadcast, conv NHWC, conv NCHW,
    lookup int32, lookup int64] against numpy / tf.nn references.
    ``weight_atol``: how far the op's weights may be from ``weights`` /
    ``filters`` (0: the same by construction)."""
    # The matmuls against the exact product (float64 numpy) of the
    # reference weights: a float32 sum of the products in whatever order
    # the kernel picks, plus the weights' own difference.
    x64, x3_64 = x.astype(np.float64), x3.astype(np.float64)
    atol = matmul_atol(x, weights) + weight_atol * max(
        np.abs(x).sum(-1).max(), np.abs(x3).sum(-1).max())
    np.testing.assert_allclose(got[0], x64 @ weights, rtol=0, atol=atol)
    np.testing.assert_allclose(got[1], x64 @ weights, rtol=0, atol=atol)
    np.testing.assert_allclose(got[2], np.tensordot(x3_64, weights, 1),
                               rtol=0, atol=atol)
    # The convolutions against tf.nn.conv2d's, both float32 (the NCHW one
    # may sum in another order): twice one's bound.
    taps = int(np.prod(np.shape(filters)[:-1]))
    atol = 2 * conv2d_atol(images, filters) + weight_atol * taps * float(
        np.abs(images).max())
    np.testing.assert_allclose(got[3], conv_ref, rtol=0, atol=atol)
    np.testing.assert_allclose(got[4], conv_ref.transpose(0, 3, 1, 2),
                               rtol=0, atol=atol)
    # Lookups copy the rows of the weights (exact where weight_atol = 0).
    np.testing.assert_allclose(got[5], lookup_ref, rtol=0, atol=weight_atol)
    np.testing.assert_allclose(got[6], lookup_ref, rtol=0, atol=weight_atol)


def cell_against_tf_cell(sess, cell, ref_cell, inputs, kernel, bias):
    """``(outputs of cell, outputs of ref_cell)`` under dynamic_rnn over
    ``inputs``: ``cell`` a sparse cell in evaluation mode, ``ref_cell``
    TensorFlow's own cell of the same kind, given ``kernel`` (the sparse
    cell's evaluation weights, computed by the caller) and ``bias``."""
    out = tf.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)[0]
    ref, _ = tf.nn.dynamic_rnn(ref_cell, inputs, dtype=tf.float32,
                               scope="reference")
    ref_kernel, ref_bias = ref_cell.variables
    sess.run([ref_kernel.assign(kernel), ref_bias.assign(bias)])
    return sess.run([out, ref])


def ledger_row(cols, blocks):
    """A [cols, 4] matmul weight whose fully-connected weight [4, cols]
    has ``blocks`` non-zero 1 x 16 blocks in row 0, the last ones, and
    the other rows zero (75 % zeros or more): the int8 1 x 16 kernel's
    byte-wide ledger at and past its limits."""
    weight = np.zeros([cols, 4], np.float32)
    values = np.random.RandomState(blocks).randn(blocks * 16) + 3.0
    weight[cols - blocks * 16:, 0] = values
    return weight


def matmuls_file(*weights):
    """A float TFLite file of ``x_i @ w_i`` for each weight (its own input
    ``x<i>`` ``[1, rows]``, output ``y<i>``), converted by the library's
    converter: fully-connected ops whose weights sparse storage rewrites."""
    from tf1_awd_sparse.export import graphdef
    with tf.Graph().as_default(), tf.Session() as session:
        inputs = [tf.placeholder(tf.float32, [1, w.shape[0]], name="x%d" % i)
                  for i, w in enumerate(weights)]
        outputs = [tf.matmul(x, tf.constant(w), name="y%d" % i)
                   for i, (x, w) in enumerate(zip(inputs, weights))]
        return graphdef.convert(session, inputs, outputs, None)
