"""The checked configuration (awd_lm.config.params): every flat key in one
section, the flat round trip key for key and in order, checks at entry,
immutability, and the config files of the last release read as written."""
import json
import os
import pickle

import pytest

from tf1_awd_sparse.awd_lm.config import params as P
from tf1_awd_sparse.awd_lm.config import presets

from support import ROOT

#: The ``params`` of every config.json `make demo` wrote with release 0.3.0
#: (float, plain, each compression stage), by run directory.
RELEASE_PARAMS = os.path.join(ROOT, "tests", "data",
                              "awd_lm_0.3.0_demo_params.json")


def test_sections_partition_the_checked_keys():
    keys = [k for cls in P.SECTIONS.values() for k in cls._fields]
    assert len(keys) == len(set(keys))
    assert set(keys) == set(presets.CHECKS)


@pytest.mark.parametrize("preset", sorted(presets.PRESETS))
@pytest.mark.parametrize("model", sorted(presets.MODEL_OVERRIDES))
def test_flat_round_trip_is_key_for_key_and_in_order(preset, model):
    flat = presets.params_for(preset, model)
    flat = dict(flat, vocab_size=33)
    params = P.as_params(flat)
    assert list(params.to_flat().items()) == list(flat.items())
    again = P.Params.from_flat(json.loads(json.dumps(params.to_flat())))
    assert again == params and again.to_flat() == flat
    assert pickle.loads(pickle.dumps(params)) == params


def test_attributes_are_the_flat_values():
    flat = dict(presets.params_for("demo", "awd"), vocab_size=7)
    params = P.as_params(flat)
    for key, value in flat.items():
        section = getattr(params, P._SECTION_OF[key])
        assert getattr(section, key) == value


def test_missing_keys_take_the_one_default():
    params = P.as_params({"vocab_size": 5})
    assert params.regularization.alpha == presets.DEFAULTS["alpha"]
    assert params.run.model == "awd" and params.stage.use_vd is False
    assert "distill_from" not in params.to_flat()
    assert params.stage.distill_from is None
    assert list(params.to_flat()) == ["vocab_size"]


def _release_params():
    with open(RELEASE_PARAMS) as f:
        return sorted(json.load(f).items())


@pytest.mark.parametrize("run, flat", _release_params())
def test_the_last_releases_configs_read_and_write_back(run, flat):
    params = P.Params.from_flat(flat)
    assert params.to_flat() == flat
    assert json.loads(json.dumps(params.to_flat())) == flat
    for key in set(presets.DEFAULTS) - set(flat):   # e.g. a float phase's
        assert key not in params.to_flat()          # quantization keys
        section = getattr(params, P._SECTION_OF[key])
        assert getattr(section, key) == presets.DEFAULTS[key]


def test_without_leaves_keys_out_and_their_defaults_in():
    params = P.as_params(presets.params_for("demo", "awd")).replace(
        quant=True, quant_epochs=5)
    float_phase = params.without(*presets.QUANT_KEYS)
    assert not set(presets.QUANT_KEYS) & set(float_phase.to_flat())
    assert float_phase.quantization.quant_epochs == \
        presets.DEFAULTS["quant_epochs"]


@pytest.mark.parametrize("flat, message", [
    ({"hiden_size": 3}, "did you mean 'hidden_size'"),
    ({"bptt": 0}, "params['bptt'] must be a positive int, got 0"),
    ({"use_vd": 1}, "params['use_vd'] must be a bool"),
    ({"optimizer": "adam"}, "params['optimizer']"),
])
def test_bad_input_is_refused_naming_the_key(flat, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[")
                       .replace("]", r"\]").replace("(", r"\(")):
        P.as_params(flat)


@pytest.mark.parametrize("flat", [{}, {"batch_size": 7},
                                  {"batch_size": 3, "eval_batch_size": 11}])
def test_each_split_has_its_batch_size_and_key(flat):
    """Training cuts the train split by batch_size, validation and test by
    eval_batch_size; each key names the value it comes with, a defaulted
    one included (the registry's default)."""
    sizes = P.as_params(flat).batch_sizes()
    assert list(sizes) == ["train", "valid", "test"]
    assert [key for key, _ in sizes.values()] == [
        "batch_size", "eval_batch_size", "eval_batch_size"]
    for key, value in sizes.values():
        assert value == flat.get(key, presets.DEFAULTS[key])


def test_params_never_change():
    params = P.as_params({"lr": 2.0})
    with pytest.raises(AttributeError, match="replace"):
        params.lr = 3.0
    with pytest.raises(TypeError):
        params["lr"] = 3.0
    changed = params.replace(lr=3.0)
    assert params.optimization.lr == 2.0 and changed.optimization.lr == 3.0
    with pytest.raises(ValueError, match="lr"):
        params.replace(lr=-1.0)
    with pytest.raises(TypeError, match="dict of parameters"):
        P.as_params([("lr", 1.0)])


def test_stage_knobs_are_not_user_keys():
    assert "average_from_start" not in P.USER_KEYS
    assert "select_min_sparsity" not in P.USER_KEYS
    assert set(P.USER_KEYS) | set(P.STAGE_KEYS) >= set(presets.DEFAULTS)


def test_the_docs_table_is_the_sections():
    """docs/awd_lm.md's table of sections says what SECTIONS holds."""
    import re
    with open(os.path.join(ROOT, "docs", "awd_lm.md")) as f:
        text = f.read()
    table = text[text.index("| section | keys |"):]
    rows = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        name, keys = [c.strip() for c in line.strip("|").split("|")]
        rows[name.strip("`")] = set(re.findall(r"`([a-z_0-9]+)`", keys)) & \
            set(P._SECTION_OF)
    assert rows == dict((name, set(cls._fields))
                        for name, cls in P.SECTIONS.items())


def test_a_key_not_given_is_no_item_but_reads_its_default():
    """Issue 54, item 10: ``params[key]`` of a key not given raises
    KeyError (as the former dicts did), while its attribute reads
    `presets.DEFAULTS`."""
    params = P.as_params({"lr": 2.0, "quant_epochs": 5})
    with pytest.warns(DeprecationWarning):
        assert params["quant_epochs"] == 5
    for key in ("quant_delay", "bptt", "target_sparsity", "no_such_key"):
        assert key not in params.to_flat()
        with pytest.raises(KeyError):
            params[key]  # pylint: disable=pointless-statement
    assert params.quantization.quant_delay == presets.DEFAULTS["quant_delay"]
    assert params.optimization.bptt == presets.DEFAULTS["bptt"]


def test_params_is_no_mapping():
    """Issue 56: a `Params` is read by attribute; the mapping of 0.4.0
    (iteration, ``in``, ``keys`` / ``items`` / ``values`` / ``get``,
    ``len``, ``dict(params)``) is gone, each a TypeError or an
    AttributeError, never a silent fallback; `to_flat` is the dict."""
    import collections.abc
    params = P.as_params({"lr": 2.0})
    assert not isinstance(params, collections.abc.Mapping)
    for use in (dict, iter, len, list, lambda p: "lr" in p):
        with pytest.raises(TypeError):
            use(params)
    for name in ("keys", "items", "values", "get"):
        assert not hasattr(params, name), name
    assert dict(params.to_flat()) == {"lr": 2.0}


@pytest.mark.parametrize("key, attribute", [
    ("lr", "optimization.lr"), ("hidden_size", "model.hidden_size"),
    ("use_vd", "stage.use_vd"), ("quant_epochs", "quantization.quant_epochs")])
def test_an_item_read_warns_naming_the_attribute(key, attribute):
    """``params['lr']`` (code of the 0.3.x parameter dicts) still returns
    the value, with a DeprecationWarning from `base.legacy` naming the
    attribute to read, the release that drops it and the caller's line;
    ``-W error:tf1_awd_sparse:DeprecationWarning`` makes it an error."""
    import warnings
    from tf1_awd_sparse.base import legacy
    flat = dict(presets.params_for("demo", "awd"), quant_epochs=4,
                use_vd=True)
    params = P.as_params(flat)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = params[key]
    section, name = attribute.split(".")
    assert value == flat[key] == getattr(getattr(params, section), name)
    assert len(caught) == 1 and caught[0].category is DeprecationWarning
    message = str(caught[0].message)
    assert message.startswith("tf1_awd_sparse.awd_lm.config.params.Params[")
    assert "use params.%s" % attribute in message
    assert legacy.NEXT_REMOVED_IN in message
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "tf1_awd_sparse",
                                DeprecationWarning)
        with pytest.raises(DeprecationWarning):
            params[key]  # pylint: disable=pointless-statement


def test_the_item_read_stays_one_release_after_its_first_warning():
    """No release has warned about ``params['lr']`` yet: the next one (the
    one that drops the flat names, `legacy.REMOVED_IN`) first does, so it
    goes in the release after (as each deprecation of the project stays a
    release)."""
    import tf1_awd_sparse
    from tf1_awd_sparse.base import legacy

    def version(text):
        return tuple(int(p) for p in text.split("."))
    assert version(legacy.NEXT_DEPRECATED_SINCE) > version(
        tf1_awd_sparse.__version__)
    assert version(legacy.NEXT_REMOVED_IN) > version(
        legacy.NEXT_DEPRECATED_SINCE)


def test_params_equal_params_only():
    """Two `Params` are equal when their flat dicts are (the keys given and
    their values); a dict is no `Params`, whichever side it is on, so a
    dict is compared with ``to_flat()``."""
    flat = {"lr": 2.0, "bptt": 7}
    params = P.as_params(flat)
    assert params == P.as_params(dict(flat)) and not params != \
        P.as_params(flat)
    assert params != P.as_params(dict(flat, bptt=8))
    # The same values, one of them given only in the second: not equal.
    assert params != P.as_params(dict(flat, clip=presets.DEFAULTS["clip"]))
    assert params != flat and flat != params and not params == flat
    assert params.to_flat() == flat


def test_takes_params_checks_a_dict_once_and_keeps_the_signature():
    """A `takes_params` function gets a checked `Params` from a dict (a
    `Params` as it is, None left alone), its errors name the argument, and
    ``inspect`` sees its own signature."""
    import inspect
    seen = []

    @P.takes_params("params", "teacher")
    def entry(x, params, teacher=None):
        """doc"""
        seen.append((params, teacher))
        return x

    assert entry(1, {"lr": 3.0}) == 1
    params, teacher = seen[-1]
    assert isinstance(params, P.Params) and teacher is None
    assert params.optimization.lr == 3.0 and params.to_flat() == {"lr": 3.0}
    given = P.as_params({"bptt": 9})
    entry(2, params=given, teacher={"lr": 1.0})
    assert seen[-1][0] is given and seen[-1][1].optimization.lr == 1.0
    assert list(inspect.signature(entry).parameters) == [
        "x", "params", "teacher"]
    assert entry.__doc__ == "doc" and entry.params_entry == (
        "params", "teacher")
    with pytest.raises(P.ParameterTypeError, match="^teacher must be a dict"):
        entry(1, {}, teacher=[("lr", 1.0)])
    with pytest.raises(P.ParameterError, match=r"teacher\['bptt'\]"):
        entry(1, {}, teacher={"bptt": 0})
    with pytest.raises(TypeError, match="no argument parms"):
        P.takes_params("parms")(lambda params: params)


def test_the_configuration_floors_functions_take_params_only():
    """Below the entries, a function takes the `Params` it is given: a
    dict is no `Params` and is refused, never checked again."""
    from tf1_awd_sparse.awd_lm.config import modeldir, runrecord
    flat = dict(presets.params_for("demo", "awd"), vocab_size=10)
    params = P.as_params(flat)
    assert presets.label(params) == "awd"
    assert presets.split_quant(params)[1] is None
    assert modeldir.produced_by(params)["stage"] == "float"
    for function in (presets.label, presets.split_quant,
                     presets.check_model_params, modeldir.produced_by,
                     runrecord.plan_entry):
        with pytest.raises(AttributeError):
            function(flat)


@pytest.mark.parametrize("value, builtin", [
    ({"hiden_size": 3}, ValueError), ({"bptt": 0}, ValueError),
    ([("lr", 1.0)], TypeError)])
def test_configuration_errors_are_library_errors(value, builtin):
    """Issue 54, item 8: ``except tf1_awd_sparse.Error`` catches what
    `as_params` refuses, which stays the built-in error it was."""
    import tf1_awd_sparse
    with pytest.raises(tf1_awd_sparse.Error) as caught:
        P.as_params(value)
    assert isinstance(caught.value, builtin)
    with pytest.raises(tf1_awd_sparse.Error):
        P.as_params({"lr": 1.0}).replace(dropout=2.0)
