"""Progress bars: drawn from the solver callbacks at dispatch when verbose=True, absent when
verbose=False or when standard error is not a terminal; the user's callback still runs."""

from ratecons.progress import show_progress
from ratecons.testing import fairness_problem


def test_verbose_draws_a_bar_and_keeps_the_callback(capsys):
    events = []
    result = fairness_problem(n=120, seed=2).solve(verbose=True, callback=events.append)
    err = capsys.readouterr().err
    assert "ratecons" in err and "objective=" in err
    assert len(events) >= len(result.history) > 0  # the history, plus a start event


def test_quiet_when_not_verbose_or_not_a_terminal(capsys):
    fairness_problem(n=120, seed=2).solve(verbose=False)
    fairness_problem(n=120, seed=2).solve()  # stderr is captured: not a terminal
    assert capsys.readouterr().err == ""
    assert show_progress(None) is False and show_progress(True) is True


def test_the_bar_shows_the_shared_keys():
    from ratecons.progress import _postfix

    assert _postfix({"stage": "ccg", "lower": 0.25}) == "ccg lower=0.25"
