"""The hyperparameters of PPO: each key's type, default, range and meaning.

The defaults are those of the original BatchPPO; task configurations in
`agents/scripts/configs.py` override them. Add a key with one line here.
"""

from collections.abc import Callable
import dataclasses
from typing import Literal

from agents.tools import schema
from agents.tools.schema import key


@dataclasses.dataclass(frozen=True, kw_only=True)
class PPOConfig:
    """Keys that PPO reads from the configuration."""

    network: Callable = key(
        'feed_forward_gaussian', 'Policy and value network.', role='network')
    optimizer: Callable = key('adam', 'Optimizer class, built with the learning rate.',
                              role='optimizer')
    learning_rate: float = key(1e-4, 'Step size of the optimizer.', above=0)
    learning_rate_schedule: Literal['constant', 'linear'] = key(
        'constant', 'Keep the learning rate, or decay it linearly over `steps`.')
    final_learning_rate: float | None = key(
        None, 'Rate the linear schedule reaches at `steps`: a floor that keeps late updates '
        'from vanishing (above learning_rate, the rate rises); zero if None. The constant '
        'schedule ignores it.', at_least=0)
    max_gradient_norm: float | None = key(
        None, 'Clip the gradients to this global norm; no clipping if None.', above=0)
    gradient_graph: Literal['function', 'inline', 'xla', 'xla_update'] = key(
        'function', "Where each update step computes its loss and gradients: in a function "
        "call of its own, which gets TensorFlow's oneDNN kernels (faster for 256-unit "
        "networks); inline in the training loop, with plain kernels (faster for tiny ones); "
        "in a function compiled by XLA; or 'xla_update': the whole update, all epochs and "
        "minibatches, as one function compiled by XLA, fastest where XLA is available "
        "(rollouts only; see benchmarks/update_step.py).")
    update_every: int = key(
        30, 'Episodes collected before each update (without rollout_length).', at_least=1)
    rollout_length: int | None = key(
        None, 'Train after this many steps of each environment, whatever episodes they '
        'belong to; after update_every whole episodes if None.', at_least=1)
    update_epochs: int = key(25, 'Passes over the collected experience per update.', at_least=1)
    minibatch_size: int | None = key(
        None, 'Steps per update step of feed-forward networks; all at once if None.',
        at_least=1)
    batch_size: int | None = key(
        None, 'Chunks per update step of recurrent networks; all at once if None.', at_least=1)
    chunk_length: int | None = key(
        None, 'Steps per chunk of an episode of recurrent networks; whole episodes if None.',
        at_least=1)
    objective: Literal['kl_penalty', 'clip'] = key(
        'kl_penalty', "Policy objective: BatchPPO's adaptive KL penalty, or the clipped ratio.")
    clip_ratio: float = key(
        0.2, 'The clipped objective ignores ratios further than this from 1.', above=0)
    value_clip: float | None = key(
        None, 'Clip the value change per update to this in the value loss; no clipping if '
        'None.', above=0)
    value_coef: float = key(1.0, 'Weight of the value loss.', above=0)
    entropy_coef: float = key(0.0, 'Weight of the entropy bonus.', at_least=0)
    reward_normalization: Literal['reward', 'return', 'none'] = key(
        'reward', 'Scale rewards by the spread of single rewards, or of discounted returns, '
        'or not at all; scaled rewards are clipped to [-10, 10] for training, and '
        'normalized observations to [-5, 5], as in BatchPPO.')
    discount: float = key(0.995, 'Discount factor of future rewards.', above=0, at_most=1)
    gae_lambda: float | None = key(
        None, 'Lambda of generalized advantages; Monte Carlo returns if None.',
        at_least=0, at_most=1)
    kl_target: float = key(1e-2, 'KL divergence per update the penalty aims at.', above=0)
    kl_cutoff_factor: float = key(
        2, 'The cutoff term acts above this multiple of kl_target.', above=0)
    kl_cutoff_coef: float = key(1000, 'Weight of the cutoff term.', at_least=0)
    kl_init_penalty: float = key(1, 'Initial coefficient of the KL penalty.', above=0)
    kl_penalty_bounds: tuple[float, float] = key(
        (1e-3, 1e3), 'The KL penalty coefficient stays within these bounds.', above=0)
    action_bounds: tuple[float, float] | None = key(
        None, 'Bounds the environment clips actions to, for the probability of clipped '
        'actions; the density of the sampled action if None.')
    weight_summaries: dict[str, str] = key(
        dict(all=r'.*', policy=r'.*/policy/.*', value=r'.*/value/.*'),
        'Histogram groups of weights, each a regular expression on variable names.')

    def __post_init__(self):
        lower, upper = self.kl_penalty_bounds
        if not lower <= self.kl_init_penalty <= upper:
            raise schema.ConfigError(
                f'kl_penalty_bounds {self.kl_penalty_bounds} must contain kl_init_penalty '
                f'{self.kl_init_penalty}')
        if self.rollout_length and not self.gae_lambda:
            raise schema.ConfigError(
                'rollout_length needs gae_lambda; 1.0 gives plain returns')
        if self.gradient_graph == 'xla_update' and not self.rollout_length:
            raise schema.ConfigError(
                "gradient_graph='xla_update' needs rollout_length: the update's shapes change "
                "with the episodes collected, and XLA would compile it again for each")
        self._check_sequence_keys()
        if self.action_bounds is not None and not self.action_bounds[0] < self.action_bounds[1]:
            raise schema.ConfigError(
                f'action_bounds must be (low, high) with low < high, got {self.action_bounds}')

    def _check_sequence_keys(self):
        """Recurrent networks train on chunks of sequences, feed-forward ones on single steps."""
        if getattr(self.network, 'is_recurrent', False):
            if self.minibatch_size is not None:
                raise schema.ConfigError(
                    'minibatch_size applies to feed-forward networks; a recurrent network '
                    'trains on batch_size sequences of chunk_length steps: set '
                    'minibatch_size=None and batch_size')
            if self.rollout_length and self.chunk_length and (
                    self.chunk_length > self.rollout_length):
                raise schema.ConfigError(
                    f'chunk_length {self.chunk_length} exceeds rollout_length '
                    f'{self.rollout_length}: chunks are cut from rollouts')
        elif self.chunk_length is not None or self.batch_size is not None:
            raise schema.ConfigError(
                'chunk_length and batch_size apply to recurrent networks; a feed-forward '
                'network trains on minibatch_size steps: set chunk_length=None and '
                'batch_size=None')
