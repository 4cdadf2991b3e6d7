import pytest

# the shared helpers assert too: give their failures pytest's detailed messages
pytest.register_assert_rewrite("lang_helpers")
