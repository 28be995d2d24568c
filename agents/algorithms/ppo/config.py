"""The hyperparameters of PPO: each key's type, default, range and meaning.

The defaults are those of the original BatchPPO; task configurations in
`agents/scripts/configs.py` override them. Add a key with one line here.
"""

from collections.abc import Callable
import dataclasses

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
    update_every: int = key(30, 'Episodes collected before each update.', at_least=1)
    update_epochs: int = key(25, 'Passes over the collected episodes per update.', at_least=1)
    batch_size: int | None = key(
        None, 'Chunks per update step; all at once if None.', at_least=1)
    chunk_length: int | None = key(
        None, 'Steps per chunk of an episode; whole episodes if None.', at_least=1)
    discount: float = key(0.995, 'Discount factor of future rewards.', above=0, at_most=1)
    gae_lambda: float | None = key(
        None, 'Lambda of generalized advantages; Monte Carlo returns if None.',
        at_least=0, at_most=1)
    kl_target: float = key(1e-2, 'KL divergence per update the penalty aims at.', above=0)
    kl_cutoff_factor: float = key(
        2, 'The cutoff term acts above this multiple of kl_target.', above=0)
    kl_cutoff_coef: float = key(1000, 'Weight of the cutoff term.', at_least=0)
    kl_init_penalty: float = key(1, 'Initial coefficient of the KL penalty.', above=0)
    action_bounds: tuple[float, float] | None = key(
        None, 'Bounds the environment clips actions to, for the probability of clipped '
        'actions; the density of the sampled action if None.')
    weight_summaries: dict[str, str] = key(
        dict(all=r'.*', policy=r'.*/policy/.*', value=r'.*/value/.*'),
        'Histogram groups of weights, each a regular expression on variable names.')

    def __post_init__(self):
        if self.action_bounds is not None and not self.action_bounds[0] < self.action_bounds[1]:
            raise schema.ConfigError(
                f'action_bounds must be (low, high) with low < high, got {self.action_bounds}')
