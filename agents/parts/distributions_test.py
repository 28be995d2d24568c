"""Tests for the action distributions."""

import math

import numpy as np
import pytest
import tensorflow as tf

from agents.parts.distributions import Bernoulli
from agents.parts.distributions import Categorical
from agents.parts.distributions import DiagonalGaussian
from agents.parts.distributions import FactoredCategorical


def _evaluate(fetches, seed=None):
    """Runs fetches built by a function in a fresh graph."""
    with tf.Graph().as_default():
        if seed is not None:
            tf.compat.v1.set_random_seed(seed)
        tensors = fetches()
        with tf.compat.v1.Session() as session:
            return session.run(tensors)


def _log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


_RANDOM = np.random.RandomState(0)
_MEAN = _RANDOM.normal(size=(3, 4, 2)).astype(np.float32)
_LOG_STD = _RANDOM.uniform(-1, 0.5, size=(3, 4, 2)).astype(np.float32)
_OTHER_MEAN = _RANDOM.normal(size=(3, 4, 2)).astype(np.float32)
_OTHER_LOG_STD = _RANDOM.uniform(-1, 0.5, size=(3, 4, 2)).astype(np.float32)
_LOGITS = _RANDOM.normal(size=(3, 4, 5)).astype(np.float32)
_OTHER_LOGITS = _RANDOM.normal(size=(3, 4, 5)).astype(np.float32)


class TestDiagonalGaussian:

    def test_log_prob_matches_closed_form(self):
        value = _RANDOM.normal(size=_MEAN.shape).astype(np.float32)
        std = np.exp(_LOG_STD)
        expected = np.sum(
            -0.5 * ((value - _MEAN) / std) ** 2 - np.log(std * np.sqrt(2 * np.pi)), -1)
        result = _evaluate(lambda: DiagonalGaussian(_MEAN, _LOG_STD).log_prob(value))
        assert result.shape == (3, 4)
        np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)

    def test_entropy_matches_closed_form(self):
        expected = np.sum(0.5 * np.log(2 * np.pi * np.e * np.exp(2 * _LOG_STD)), -1)
        result = _evaluate(lambda: DiagonalGaussian(_MEAN, _LOG_STD).entropy())
        np.testing.assert_allclose(result, expected, rtol=1e-5)

    def test_kl_matches_closed_form(self):
        variance, other_variance = np.exp(2 * _LOG_STD), np.exp(2 * _OTHER_LOG_STD)
        expected = np.sum(
            0.5 * np.log(other_variance / variance)
            + (variance + (_MEAN - _OTHER_MEAN) ** 2) / (2 * other_variance) - 0.5, -1)

        def kl():
            distribution = DiagonalGaussian(_MEAN, _LOG_STD)
            return distribution.kl(DiagonalGaussian(_OTHER_MEAN, _OTHER_LOG_STD))

        np.testing.assert_allclose(_evaluate(kl), expected, rtol=1e-5, atol=1e-5)

    def test_kl_of_distribution_with_itself_is_zero(self):
        def kl():
            distribution = DiagonalGaussian(_MEAN, _LOG_STD)
            return distribution.kl(distribution)

        np.testing.assert_allclose(_evaluate(kl), np.zeros((3, 4)), atol=1e-6)

    def test_sample_statistics(self):
        mean = np.array([1.0, -2.0, 0.0], np.float32)
        log_std = np.log(np.array([0.5, 1.0, 2.0], np.float32))

        def samples():
            return DiagonalGaussian(np.tile(mean, [20000, 1]), log_std).sample()

        result = _evaluate(samples, seed=1)
        assert result.shape == (20000, 3)
        np.testing.assert_allclose(result.mean(0), mean, atol=0.05)
        np.testing.assert_allclose(result.std(0), np.exp(log_std), rtol=0.03)

    def test_sample_honours_graph_seed(self):
        def samples():
            return DiagonalGaussian(_MEAN, _LOG_STD).sample()

        np.testing.assert_array_equal(_evaluate(samples, seed=3), _evaluate(samples, seed=3))
        assert not np.array_equal(_evaluate(samples, seed=3), _evaluate(samples, seed=4))

    def test_mode_and_shared_log_std_broadcast(self):
        def parameters():
            distribution = DiagonalGaussian(_MEAN, np.float32([-1.0, 0.5]))
            return distribution.mode(), distribution.log_std, distribution.std

        mode, log_std, std = _evaluate(parameters)
        np.testing.assert_array_equal(mode, _MEAN)
        assert log_std.shape == _MEAN.shape
        np.testing.assert_allclose(std[1, 2], np.exp([-1.0, 0.5]), rtol=1e-6)

    def test_rebuilds_from_parameters(self):
        def entropies():
            distribution = DiagonalGaussian(_MEAN, _LOG_STD)
            rebuilt = type(distribution)(**distribution.parameters)
            return distribution.entropy(), rebuilt.entropy()

        original, rebuilt = _evaluate(entropies)
        np.testing.assert_array_equal(original, rebuilt)

    def test_gradient_of_log_prob_reaches_parameters(self):
        def gradients():
            mean = tf.constant(_MEAN)
            log_std = tf.constant(_LOG_STD)
            log_prob = DiagonalGaussian(mean, log_std).log_prob(_OTHER_MEAN)
            return tf.gradients(tf.reduce_sum(log_prob), [mean, log_std])

        mean_gradient, log_std_gradient = _evaluate(gradients)
        variance = np.exp(2 * _LOG_STD)
        np.testing.assert_allclose(
            mean_gradient, (_OTHER_MEAN - _MEAN) / variance, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(
            log_std_gradient, (_OTHER_MEAN - _MEAN) ** 2 / variance - 1, rtol=1e-4, atol=1e-4)

    def test_clipped_log_prob_puts_the_mass_beyond_a_bound_on_it(self):
        mean = np.array([[0.5, 3.0, -2.0, 0.0]], np.float32)
        log_std = np.log(np.array([0.3, 0.5, 1.0, 0.01], np.float32))
        value = np.array([[0.2, 5.0, -1.5, 1.0]], np.float32)

        def fetches():
            mean_tensor = tf.constant(mean)
            log_prob = DiagonalGaussian(mean_tensor, log_std).clipped_log_prob(value, -1.0, 1.0)
            return log_prob, tf.gradients(log_prob, mean_tensor)[0]

        log_prob, mean_gradient = _evaluate(fetches)

        def log_normal_cdf(x):
            return math.log(0.5 * math.erfc(-x / math.sqrt(2)))

        expected = (
            -0.5 * (0.3 / 0.3) ** 2 - math.log(0.3 * math.sqrt(2 * math.pi)) +
            log_normal_cdf((3.0 - 1.0) / 0.5) + log_normal_cdf((-1.0 + 2.0) / 1.0) +
            -0.5 * 100.0 ** 2 - math.log(100.0) - 0.5 * math.log(2 * math.pi) +
            math.log1p(-1e-4 + 3e-8))
        np.testing.assert_allclose(log_prob, [expected], rtol=1e-4)
        # The upper bound is likely for the mean beyond it, and its probability
        # grows as the mean moves out; the lower bound's shrinks.
        assert np.isfinite(mean_gradient).all()
        assert mean_gradient[0, 1] > 0 and mean_gradient[0, 2] < 0 and mean_gradient[0, 3] > 0

    def test_rejects_bad_parameters(self):
        with tf.Graph().as_default():
            with pytest.raises(ValueError, match='event axis'):
                DiagonalGaussian(1.0, 0.0)
            with pytest.raises(ValueError, match='broadcast'):
                DiagonalGaussian(np.zeros((2, 3), np.float32), np.zeros(4, np.float32))
            with pytest.raises(TypeError, match='floating'):
                DiagonalGaussian(tf.zeros(3, tf.float32), tf.zeros(3, tf.float64))
            with pytest.raises(TypeError, match='another DiagonalGaussian'):
                DiagonalGaussian(_MEAN, _LOG_STD).kl(Categorical(_LOGITS))


class TestCategorical:

    def test_log_prob_matches_closed_form(self):
        value = _RANDOM.randint(0, 5, size=(3, 4)).astype(np.int32)
        expected = np.take_along_axis(_log_softmax(_LOGITS), value[..., None], -1)[..., 0]
        result = _evaluate(lambda: Categorical(_LOGITS).log_prob(value))
        np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)

    def test_entropy_matches_closed_form(self):
        log_probs = _log_softmax(_LOGITS)
        expected = -np.sum(np.exp(log_probs) * log_probs, -1)
        result = _evaluate(lambda: Categorical(_LOGITS).entropy())
        np.testing.assert_allclose(result, expected, rtol=1e-5)

    def test_entropy_with_impossible_class_is_finite(self):
        logits = np.float32([[0.0, 0.0, -np.inf]])
        result = _evaluate(lambda: Categorical(logits).entropy())
        np.testing.assert_allclose(result, [math.log(2)], rtol=1e-6)

    def test_kl_matches_closed_form(self):
        log_probs, other_log_probs = _log_softmax(_LOGITS), _log_softmax(_OTHER_LOGITS)
        expected = np.sum(np.exp(log_probs) * (log_probs - other_log_probs), -1)
        result = _evaluate(lambda: Categorical(_LOGITS).kl(Categorical(_OTHER_LOGITS)))
        np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)

    def test_mode_and_probs(self):
        def parameters():
            distribution = Categorical(_LOGITS)
            return distribution.mode(), distribution.probs

        mode, probs = _evaluate(parameters)
        assert mode.dtype == np.int32
        np.testing.assert_array_equal(mode, _LOGITS.argmax(-1))
        np.testing.assert_allclose(probs, np.exp(_log_softmax(_LOGITS)), rtol=1e-5)

    def test_sample_statistics(self):
        probs = np.float32([0.1, 0.6, 0.3])
        logits = np.tile(np.log(probs), [2, 10000, 1])
        result = _evaluate(lambda: Categorical(logits).sample(), seed=1)
        assert result.shape == (2, 10000)
        assert result.dtype == np.int32
        frequencies = np.bincount(result.ravel(), minlength=3) / result.size
        np.testing.assert_allclose(frequencies, probs, atol=0.015)

    def test_sample_honours_graph_seed(self):
        def samples():
            return Categorical(_LOGITS).sample()

        np.testing.assert_array_equal(_evaluate(samples, seed=3), _evaluate(samples, seed=3))

    def test_rejects_bad_input(self):
        with tf.Graph().as_default():
            with pytest.raises(TypeError, match='floating logits'):
                Categorical(np.zeros((2, 3), np.int32))
            with pytest.raises(ValueError, match='class axis'):
                Categorical(1.0)
            with pytest.raises(TypeError, match='integer class indices'):
                Categorical(_LOGITS).log_prob(np.zeros((3, 4), np.float32))
            with pytest.raises(TypeError, match='another Categorical'):
                Categorical(_LOGITS).kl(DiagonalGaussian(_MEAN, _LOG_STD))


def _padded_logits():
    """Logits `[3, 2 entries, 4 classes]` of a MultiDiscrete([4, 2]): entry 1 has two classes."""
    logits = _RANDOM.normal(size=(3, 2, 4)).astype(np.float32)
    logits[:, 1, 2:] = FactoredCategorical.PADDING
    return logits


class TestFactoredCategorical:

    def test_log_prob_entropy_and_kl_sum_over_entries(self):
        logits, other = _padded_logits(), _padded_logits()
        value = np.array([[3, 1], [0, 0], [2, 1]], np.int32)
        log_probs = _log_softmax(logits)
        expected_log_prob = log_probs[np.arange(3), 0, value[:, 0]] + log_probs[
            np.arange(3), 1, value[:, 1]]
        probs = np.exp(log_probs)
        expected_entropy = -np.sum(np.where(probs > 0, probs * log_probs, 0), (-1, -2))
        expected_kl = np.sum(np.where(
            probs > 0, probs * (log_probs - _log_softmax(other)), 0), (-1, -2))

        def fetches():
            distribution = FactoredCategorical(logits)
            return (distribution.log_prob(value), distribution.entropy(),
                    distribution.kl(FactoredCategorical(other)))
        log_prob, entropy, kl = _evaluate(fetches)
        assert log_prob.shape == entropy.shape == kl.shape == (3,)
        np.testing.assert_allclose(log_prob, expected_log_prob, rtol=1e-5)
        np.testing.assert_allclose(entropy, expected_entropy, rtol=1e-5)
        np.testing.assert_allclose(kl, expected_kl, rtol=1e-4, atol=1e-6)

    def test_samples_stay_within_each_entry_and_mode_is_the_argmax(self):
        logits = np.tile(_padded_logits()[:1], (2000, 1, 1))

        def fetches():
            distribution = FactoredCategorical(logits)
            return distribution.sample(), distribution.mode(), distribution.parameters
        samples, mode, parameters = _evaluate(fetches, seed=1)
        assert samples.shape == (2000, 2) and samples.dtype == np.int32
        assert samples[:, 0].max() <= 3 and samples[:, 1].max() <= 1
        assert set(samples[:, 1]) == {0, 1}
        expected = np.exp(_log_softmax(logits[0, 0]))
        frequencies = np.bincount(samples[:, 0], minlength=4) / 2000
        np.testing.assert_allclose(frequencies, expected, atol=0.04)
        assert mode[0].tolist() == logits[0].argmax(-1).tolist()
        np.testing.assert_array_equal(parameters['logits'], logits)

    def test_kl_needs_another_factored_categorical(self):
        with tf.Graph().as_default():
            with pytest.raises(TypeError, match='FactoredCategorical'):
                FactoredCategorical(_padded_logits()).kl(Categorical(_LOGITS))


class TestBernoulli:

    def test_log_prob_entropy_and_kl_match_closed_form(self):
        logits = _RANDOM.normal(size=(3, 4)).astype(np.float32)
        other = _RANDOM.normal(size=(3, 4)).astype(np.float32)
        value = (_RANDOM.uniform(size=(3, 4)) < 0.5).astype(np.int32)
        p, q = 1 / (1 + np.exp(-logits)), 1 / (1 + np.exp(-other))
        expected_log_prob = np.sum(np.log(np.where(value == 1, p, 1 - p)), -1)
        expected_entropy = -np.sum(p * np.log(p) + (1 - p) * np.log(1 - p), -1)
        expected_kl = np.sum(
            p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q)), -1)

        def fetches():
            distribution = Bernoulli(logits)
            return (distribution.log_prob(value), distribution.entropy(),
                    distribution.kl(Bernoulli(other)))
        log_prob, entropy, kl = _evaluate(fetches)
        np.testing.assert_allclose(log_prob, expected_log_prob, rtol=1e-5)
        np.testing.assert_allclose(entropy, expected_entropy, rtol=1e-5)
        np.testing.assert_allclose(kl, expected_kl, rtol=1e-4, atol=1e-6)

    def test_samples_are_zero_or_one_at_the_rate_of_the_logits(self):
        logits = np.tile(np.array([[-1.0, 0.0, 2.0]], np.float32), (4000, 1))

        def fetches():
            distribution = Bernoulli(logits)
            return distribution.sample(), distribution.mode()
        samples, mode = _evaluate(fetches, seed=2)
        assert samples.dtype == np.int32 and set(np.unique(samples)) == {0, 1}
        np.testing.assert_allclose(
            samples.mean(0), 1 / (1 + np.exp(-logits[0])), atol=0.03)
        assert mode[0].tolist() == [0, 0, 1]
        assert _evaluate(lambda: Bernoulli(logits).sample(), seed=2).tolist() == (
            samples.tolist())

    def test_rejects_bad_input(self):
        with tf.Graph().as_default():
            with pytest.raises(TypeError, match='floating'):
                Bernoulli(np.zeros(3, np.int32))
            with pytest.raises(ValueError, match='entry axis'):
                Bernoulli(0.5)
