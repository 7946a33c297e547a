"""What every check test tries: a stub not yet written, and code that crashes."""


def stub(*args):
    raise NotImplementedError


def crashes(*args):
    return args[0].no_such_attribute


def assert_todo_then_error(check_fn, crash=crashes, *expected_in_message: str) -> None:
    """A stub gets "not yet"; a crash is reported in words, naming ``expected_in_message``."""
    todo = check_fn(stub)
    assert todo.status == "todo" and not todo
    assert todo.message.startswith("Not yet: "), todo.message  # the word, not only an emoji

    error = check_fn(crash)
    assert error.status == "error" and not error
    assert error.message.startswith("Error: "), error.message
    assert "Traceback" not in error.message
    for text in expected_in_message:
        assert text in error.message
