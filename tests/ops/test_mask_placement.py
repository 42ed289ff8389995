"""The library's state under TensorFlow's distributed runtime (issue 7),
in one process: where variables go under replica_device_setter, masks per
worker on an in-process gRPC cluster, replica-local masks under
MirroredStrategy, and checkpoints that restore with or without masks."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tf1_awd_sparse.base import compat as _compat
from tf1_awd_sparse.ops import mask_placement
from tf1_awd_sparse.awd_lm.distributed.cluster import mirrored_strategy
from support.versions import needs_estimator
from variational_dropout import VariationalDropout
from weight_drop_lstm import WeightDropLSTMCell

from support import example

# The example's harness, imported by its path (examples/ is no package).
local_cluster = example("local_cluster")
free_ports = local_cluster.free_ports

CONFIG = dict(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)


def _strategy_variable_kind(variable):
    """'mirrored' (ON_WRITE) or 'replica_local' (ON_READ) for a variable made
    under MirroredStrategy, else None. TF 1.13 has no public predicate, and
    1.14 renamed ReplicaLocalVariable to SyncOnReadVariable: the class
    names decide, without importing TensorFlow's private modules."""
    names = {cls.__name__ for cls in type(variable).__mro__}
    if "MirroredVariable" in names:
        return "mirrored"
    if names & {"ReplicaLocalVariable", "SyncOnReadVariable"}:
        return "replica_local"
    return None


def _two_cpu_strategy():
    """The library's MirroredStrategy over /cpu:0 and /cpu:1 (core
    tf.distribute on every version; the sessions create the devices)."""
    strategy = mirrored_strategy(2)
    assert isinstance(strategy, tf.distribute.MirroredStrategy)
    return strategy


def _copies(variable):
    """Every replica's copy of a distributed variable, in device order."""
    return _compat.replica_values(variable)


def _device_index(variable):
    return tf.DeviceSpec.from_string(variable.device).device_index


def _cluster_spec():
    ports = free_ports(3)
    return tf.train.ClusterSpec({
        "ps": ["localhost:%d" % ports[0]],
        "worker": ["localhost:%d" % p for p in ports[1:]]})


@pytest.fixture(scope="module")
def grpc_cluster():
    """One ps and two workers as in-process gRPC servers (they live until
    the test process exits; TF 1.13 servers cannot be stopped)."""
    spec = _cluster_spec()
    servers = {(job, i): tf.train.Server(
        spec, job_name=job, task_index=i,
        config=tf.ConfigProto(**CONFIG), start=True)
        for job in ("ps", "worker")
        for i in range(len(spec.job_tasks(job)))}
    return spec, servers


def _device_setter(spec, worker):
    return tf.train.replica_device_setter(
        worker_device="/job:worker/task:%d" % worker, cluster=spec)


def _build(use_vd=True, is_train=True, seed=None, **cell_kwargs):
    """A one-layer cell on a constant input; returns (cell, vd, output)."""
    x = tf.constant(np.linspace(-1, 1, 2 * 3 * 4).reshape(2, 3, 4),
                    tf.float32)
    cell = WeightDropLSTMCell(5, weight_drop_kr=0.5, use_vd=use_vd,
                              is_train=is_train, seed=seed, **cell_kwargs)
    y, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    vd = VariationalDropout([5], 0.5, seed=seed) if use_vd else None
    if vd is not None:
        y = vd(y)
    return cell, vd, y


def _job(device):
    return tf.DeviceSpec.from_string(device).job


def test_replica_device_setter_keeps_masks_on_the_worker():
    spec = _cluster_spec()
    with tf.device(_device_setter(spec, worker=1)):
        cell, vd, _ = _build()
    weights = [v for v in tf.global_variables()]
    # Model weights go to the ps, as for any variable.
    assert {_job(v.device) for v in weights} == {"ps"}
    assert {v.op.name.split("/")[-1] for v in weights} == {"kernel", "bias"}
    # Masks stay on this worker, in LOCAL_VARIABLES (never saved), and so
    # do the ops that resample them.
    masks = [cell.mask_variable, vd.mask]
    for mask in masks:
        assert mask.device == "/job:worker/task:1"
        assert mask in tf.local_variables()
        assert mask not in tf.global_variables()
    assert mask_placement.mask_variables() == masks
    for op in cell.get_vd_update_op() + vd.get_update_mask_op():
        assert op.device == "/job:worker/task:1"


def test_single_process_masks_are_local_and_self_initializing(sess):
    # A mask is per-process sampling state: a local variable, never saved;
    # the usual global_variables_initializer() pattern still works because
    # the first read initializes a mask nothing initialized.
    cell, vd, y = _build()
    for mask in (cell.mask_variable, vd.mask):
        assert mask not in tf.global_variables()
        assert mask in tf.local_variables()
        assert mask.device == ""
    sess.run(tf.global_variables_initializer())
    assert np.isfinite(sess.run(y)).all()


def test_quant_ranges_and_sparse_parameters_are_shared_on_the_ps():
    spec = _cluster_spec()
    with tf.device(_device_setter(spec, worker=0)):
        x = tf.zeros([2, 3, 4])
        quant = WeightDropLSTMCell(5, weight_drop_kr=0.5, use_vd=True,
                                   is_quant=True, name="quant")
        tf.nn.dynamic_rnn(quant, x, dtype=tf.float32, scope="q")
        sparse = WeightDropLSTMCell(5, sparsity="variational_dropout",
                                    name="sparse")
        tf.nn.dynamic_rnn(sparse, x, dtype=tf.float32, scope="s")
    ranges = [v for v in tf.global_variables() if "/quant/" in v.name]
    assert ranges, "the quantizing cell made no range variables"
    shared = ranges + [sparse.sparse_aux_variable]
    for v in shared:
        assert _job(v.device) == "ps", v
        assert v in tf.global_variables()
    assert [m.device for m in mask_placement.mask_variables()] == [
        "/job:worker/task:0"]


def _worker_graph(spec, worker):
    graph = tf.Graph()
    with graph.as_default(), tf.device(_device_setter(spec, worker)):
        # A different graph seed per worker, as the Estimator CLI uses.
        tf.set_random_seed(100 + worker)
        cell, vd, y = _build()
        kernel_delta = tf.placeholder(tf.float32, [9, 20])
        bump = cell.trainable_weights[0].assign_add(kernel_delta)
        init = [tf.local_variables_initializer()]
        global_init = tf.global_variables_initializer()
    return dict(graph=graph, cell=cell, vd=vd, y=y, bump=bump,
                delta=kernel_delta, local_init=init, global_init=global_init,
                masks=[cell.mask_variable, vd.mask])


def test_each_worker_updates_only_its_own_mask(grpc_cluster):
    spec, servers = grpc_cluster
    workers = [_worker_graph(spec, w) for w in (0, 1)]
    sessions = [tf.Session(servers[("worker", w)].target, graph=g["graph"],
                           config=tf.ConfigProto(**CONFIG))
                for w, g in enumerate(workers)]
    try:
        a, b = workers
        sa, sb = sessions
        sa.run(a["global_init"])
        sa.run(a["local_init"])
        sb.run(b["local_init"])
        # The kernel is one shared variable on the ps ...
        sa.run(a["bump"], {a["delta"]: np.ones([9, 20])})
        ka = sa.run(a["cell"].trainable_weights[0])
        kb = sb.run(b["cell"].trainable_weights[0])
        np.testing.assert_array_equal(ka, kb)
        # ... each worker's masks are its own: worker 0 resampling them
        # many times leaves worker 1's masks exactly as they were.
        before_b = sb.run(b["masks"])
        seen_a = [sa.run(a["masks"])]
        for _ in range(5):
            sa.run(a["cell"].get_vd_update_op() + a["vd"].get_update_mask_op())
            seen_a.append(sa.run(a["masks"]))
        after_b = sb.run(b["masks"])
        for m0, m1 in zip(before_b, after_b):
            np.testing.assert_array_equal(m0, m1)
        # Worker 0's updates did resample (different masks each time) ...
        assert not np.array_equal(seen_a[0][0], seen_a[-1][0])
        # ... and the two workers draw different masks (own seeds).
        assert not np.array_equal(seen_a[-1][0], after_b[0])
    finally:
        for s in sessions:
            s.close()


def _save_distributed_checkpoint(spec, servers, path):
    g = _worker_graph(spec, 0)
    with tf.Session(servers[("worker", 0)].target, graph=g["graph"],
                    config=tf.ConfigProto(**CONFIG)) as sess:
        sess.run(g["global_init"])
        sess.run(g["local_init"])
        sess.run(g["bump"], {g["delta"]: np.full([9, 20], 0.25)})
        with g["graph"].as_default():
            saver = tf.train.Saver()
        saver.save(sess, path)
        return sess.run(g["cell"].trainable_weights)


def test_distributed_checkpoint_restores_in_one_process(grpc_cluster,
                                                        tmp_path):
    spec, servers = grpc_cluster
    path = str(tmp_path / "dist.ckpt")
    weights = _save_distributed_checkpoint(spec, servers, path)
    saved = dict(tf.train.list_variables(path))
    assert not any("mask" in name for name in saved), saved
    config = tf.ConfigProto(**CONFIG)
    # Into a single-process graph with mask variables (use_vd), with the
    # default Saver (masks are never in a checkpoint's var_list) ...
    with tf.Graph().as_default():
        cell, vd, y = _build()
        saver = tf.train.Saver()
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            saver.restore(sess, path)
            for got, want in zip(sess.run(cell.trainable_weights), weights):
                np.testing.assert_array_equal(got, want)
            assert np.isfinite(sess.run(y)).all()
    # ... and into an evaluation graph, which has none (default Saver).
    with tf.Graph().as_default():
        cell, _, y = _build(use_vd=False, is_train=False)
        assert cell.mask_variable is None
        with tf.Session(config=config) as sess:
            tf.train.Saver().restore(sess, path)
            for got, want in zip(sess.run(cell.trainable_weights), weights):
                np.testing.assert_array_equal(got, want)


def test_single_process_checkpoint_restores_into_a_worker(grpc_cluster,
                                                          tmp_path):
    spec, servers = grpc_cluster
    path = str(tmp_path / "single.ckpt")
    with tf.Graph().as_default():
        cell, _, _ = _build()
        with tf.Session(config=tf.ConfigProto(**CONFIG)) as sess:
            sess.run(tf.global_variables_initializer())
            weights = sess.run(cell.trainable_weights)
            tf.train.Saver().save(sess, path)
    # No checkpoint holds masks; a worker graph does not ask for them (its
    # masks are local) and restores the weights.
    assert not any("weight_drop_mask" in n for n, _ in
                   tf.train.list_variables(path))
    g = _worker_graph(spec, 1)
    with tf.Session(servers[("worker", 1)].target, graph=g["graph"],
                    config=tf.ConfigProto(**CONFIG)) as sess:
        with g["graph"].as_default():
            tf.train.Saver().restore(sess, path)
        sess.run(g["local_init"])
        for got, want in zip(sess.run(g["cell"].trainable_weights), weights):
            np.testing.assert_array_equal(got, want)
        assert np.isfinite(sess.run(g["y"])).all()


def test_mirrored_strategy_masks_are_replica_local():
    strategy = _two_cpu_strategy()
    built = []

    def replica_fn():
        cell, vd, y = _build()
        built.append((cell, vd))
        return tf.reduce_sum(y)

    with strategy.scope():
        out = strategy.extended.call_for_each_replica(replica_fn)
        total = strategy.reduce(tf.distribute.ReduceOp.SUM, out)
    update_ops = [op for cell, vd in built
                  for op in cell.get_vd_update_op() + vd.get_update_mask_op()]
    mask = built[0][0].mask_variable
    # One replica-local (ON_READ) variable with a copy per device, in
    # LOCAL_VARIABLES, not a mirrored one kept equal by cross-replica writes.
    copies = _copies(mask)
    assert [_device_index(c) for c in copies] == [0, 1]
    assert mask in tf.local_variables()
    assert _strategy_variable_kind(mask) == "replica_local"
    config = tf.ConfigProto(device_count={"CPU": 2}, **CONFIG)
    with tf.Session(config=config) as sess:
        sess.run([tf.global_variables_initializer(),
                  tf.local_variables_initializer()])
        assert np.isfinite(sess.run(total))
        history = []
        for _ in range(4):
            sess.run(update_ops)   # no cross-replica assignment error
            history.append(sess.run(copies))
        # Each replica resamples its own copy: the two copies differ, and
        # each changes from update to update.
        for first, second in history:
            assert not np.array_equal(first, second)
        for r in (0, 1):
            assert not np.array_equal(history[0][r], history[-1][r])
        # Replica 0's update op touches replica 0's copy only.
        replica0_ops = built[0][0].get_vd_update_op()
        before = sess.run(copies)
        sess.run(replica0_ops)
        after = sess.run(copies)
        assert not np.array_equal(before[0], after[0])
        np.testing.assert_array_equal(before[1], after[1])


def test_is_replicated_here():
    assert not mask_placement.is_replicated_here()
    with tf.device("/cpu:0"):
        assert not mask_placement.is_replicated_here()
    with tf.device(_device_setter(_cluster_spec(), worker=0)):
        assert mask_placement.is_replicated_here()
    strategy = _two_cpu_strategy()
    with strategy.scope():
        assert mask_placement.is_replicated_here()


def test_mirrored_strategy_quant_ranges_are_synchronized():
    strategy = _two_cpu_strategy()

    def replica_fn():
        # Different inputs per replica: their observed ranges differ.
        ctx = tf.distribute.get_replica_context()
        scale = 1.0 + tf.cast(ctx.replica_id_in_sync_group, tf.float32)
        x = scale * tf.constant(
            np.linspace(-2, 2, 2 * 3 * 4).reshape(2, 3, 4), tf.float32)
        cell = WeightDropLSTMCell(5, is_quant=True)
        y, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        return tf.reduce_sum(y)

    with strategy.scope():
        out = strategy.extended.call_for_each_replica(replica_fn)
        total = strategy.reduce(tf.distribute.ReduceOp.SUM, out)
    ranges = [v for v in tf.global_variables()
              if v.name.endswith("/min:0") or v.name.endswith("/max:0")]
    assert ranges and all(_strategy_variable_kind(v) == "mirrored"
                          for v in ranges)
    config = tf.ConfigProto(device_count={"CPU": 2}, **CONFIG)
    with tf.Session(config=config) as sess:
        sess.run([tf.global_variables_initializer(),
                  tf.local_variables_initializer()])
        initial = sess.run([_copies(v)[0] for v in ranges])
        for _ in range(3):     # each run folds the previous observations
            sess.run(total)     # no cross-replica assignment error
        copies = [sess.run(_copies(v)) for v in ranges]
    # Every range is learned and identical on both replicas.
    for (first, second) in copies:
        assert first == second
    assert any(c[0] != i for c, i in zip(copies, initial))


def test_replica_values_of_a_plain_variable_is_the_variable():
    v = tf.Variable(1.0)
    assert _compat.replica_values(v) == [v]
    t = tf.constant(2.0)
    assert _compat.replica_values(t) == [t]


def test_mirrored_sgd_step_averages_the_replicas_gradients():
    """One SGD step of a linear least-squares model under the library's
    MirroredStrategy, with the loss scaled by scale_replica_loss, moves the
    weights by the mean of the replicas' gradients (what Estimator trains
    with on every version): against the gradient written out in numpy."""
    x = np.arange(16, dtype=np.float32).reshape(8, 2) / 16.0
    y = np.linspace(-1.0, 1.0, 8).astype(np.float32)
    lr = 0.5
    strategy = _two_cpu_strategy()
    with strategy.scope():
        iterator = strategy.make_input_fn_iterator(
            lambda ctx: tf.data.Dataset.from_tensor_slices((x, y)).batch(2))
        features, targets = iterator.get_next()

        def replica_fn(f, t):
            w = tf.get_variable("w", [2], initializer=tf.zeros_initializer())
            loss = tf.reduce_mean(tf.square(tf.reduce_sum(f * w, 1) - t))
            opt = tf.train.GradientDescentOptimizer(lr)
            with tf.control_dependencies([opt.minimize(
                    _compat.scale_replica_loss(loss))]):
                return tf.identity(f), tf.identity(t)

        got_x, got_y = strategy.extended.call_for_each_replica(
            replica_fn, args=(features, targets))
        fetch = _copies(got_x) + _copies(got_y)
    w = [v for v in tf.global_variables() if v.op.name == "w"][0]
    init = getattr(iterator, "initializer", None)
    if init is None:
        init = iterator.initialize()
    config = tf.ConfigProto(device_count={"CPU": 2}, **CONFIG)
    with tf.Session(config=config) as sess:
        sess.run([tf.global_variables_initializer(), init])
        x0, x1, y0, y1 = sess.run(fetch)
        after = sess.run(_copies(w))
    # Each replica took its own whole batch (windows 0 and 1 of the input).
    np.testing.assert_array_equal(x0, x[0:2])
    np.testing.assert_array_equal(x1, x[2:4])

    def grad(xb, yb, weights):   # d/dw mean((xb.w - yb)^2)
        return 2.0 * ((xb.dot(weights) - yb)[:, None] * xb).mean(axis=0)

    want = -lr * (grad(x0, y0, np.zeros(2)) + grad(x1, y1, np.zeros(2))) / 2
    for copy in after:   # mirrored: both copies hold the same update
        np.testing.assert_allclose(copy, want, rtol=1e-5, atol=1e-7)


def test_scale_replica_loss_is_identity_without_a_strategy():
    loss = tf.constant(3.0)
    assert _compat.scale_replica_loss(loss) is loss


@needs_estimator
def test_under_estimator_scale_replica_loss_leaves_the_averaging_to_it(
        tmp_path):
    """Estimator already averages the replicas' gradients: inside its
    model_fn scale_replica_loss must not scale again. One SGD step of
    loss = w * mean(x^2) (gradient 1 on every replica) from w = 1 with
    lr 0.1 leaves 0.9 (averaged); 0.8 would be summed, 0.95 scaled twice."""
    def model_fn(features, labels, mode):
        w = tf.get_variable("w", [], initializer=tf.ones_initializer())
        loss = w * tf.reduce_mean(tf.square(features))
        scaled = _compat.scale_replica_loss(loss)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            scaled, tf.train.get_or_create_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    config = tf.estimator.RunConfig(
        train_distribute=_two_cpu_strategy(),
        session_config=tf.ConfigProto(device_count={"CPU": 2}, **CONFIG))
    est = tf.estimator.Estimator(model_fn, str(tmp_path), config=config)
    est.train(lambda: tf.data.Dataset.from_tensors(
        np.ones([2], np.float32)).repeat(), max_steps=1)
    np.testing.assert_allclose(est.get_variable_value("w"), 0.9, rtol=1e-6)
