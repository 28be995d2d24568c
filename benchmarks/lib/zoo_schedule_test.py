from lib import zoo_schedule


def test_the_networks_run_from_observations_to_actions_and_a_value():
    policy, value = zoo_schedule.layer_sizes(17, 6)
    assert policy == [17, 256, 256, 6] and value == [17, 256, 256, 1]


def test_a_gradient_step_counts_the_products_forward_and_backward():
    # Per sample, two FLOPs per multiply-add: each layer's product forward and to its
    # weights, and to its inputs but for the first layer.
    policy = 3 * (2 * 256 + 256 * 256 + 256 * 6) - 2 * 256
    value = 3 * (2 * 256 + 256 * 256 + 256 * 1) - 2 * 256
    assert zoo_schedule.gradient_step_flops(2, 6, minibatch_size=10) == 2 * 10 * (policy + value)


def test_the_schedule_takes_160_gradient_steps_per_512_env_steps():
    assert zoo_schedule.gradient_steps(512) == 160
    assert zoo_schedule.gradient_steps(1024 + 100) == 320


def test_the_update_is_the_training_time_less_the_collection():
    assert zoo_schedule.update_seconds(1000, dict(seconds=30.0), 100.0) == 20.0
