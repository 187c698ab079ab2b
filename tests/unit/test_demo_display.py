"""How the demo shows a value to a person: unescaped, on one line, shortened with a marker."""

from __future__ import annotations

from cortex_agents.cli._demo_view import display


def test_entities_a_model_echoed_are_unescaped_however_deep():
    assert display("&lt;question&gt;") == "<question>"
    assert display("What bears on c1?&amp;amp;#34;\\n}") == 'What bears on c1?"\\n}'
    assert display("a &amp;amp;amp;lt; b") == "a < b"


def test_whitespace_is_folded_to_one_line():
    assert display("two\n  lines\tand\r\nmore ") == "two lines and more"


def test_a_long_value_is_cut_at_a_word_with_a_marker_saying_how_much_is_left_out():
    text = "alpha beta gamma delta epsilon zeta eta theta"
    shown = display(text, 20)
    assert shown == "alpha beta gamma … [+29 chars]"
    assert len(text) - len("alpha beta gamma") == 29
    assert display(text, 200) == text  # short enough: untouched
    assert (
        display("x" * 50, 10) == "x" * 10 + " … [+40 chars]"
    )  # no word boundary: cut at the limit


def test_a_value_that_is_not_text_is_shown_as_json():
    assert display({"query_text": "&lt;a&gt;", "limit": 3}) == '{"query_text": "<a>", "limit": 3}'
