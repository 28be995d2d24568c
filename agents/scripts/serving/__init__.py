"""A trained policy written as files that act with TensorFlow alone (the export command)."""
