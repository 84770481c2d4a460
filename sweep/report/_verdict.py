"""The plain-language verdict on the sweep's winner: one small, documented rule.

Rule (:func:`judge_winner`): the winner is called **likely real** when its deflated Sharpe
ratio at the EFFECTIVE number of trials is at least 0.95 AND the probability of backtest
overfitting of the selection is below 0.5. Otherwise it is **not distinguishable from
selection luck**. Where the effective number is unknown the naive count stands in (it is at
least as large, so the test is only stricter); without a DSR there is no verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

#: A winner needs at least this deflated Sharpe ratio at the effective number of trials.
DSR_THRESHOLD = 0.95
#: ... and a probability of backtest overfitting below this.
PBO_THRESHOLD = 0.5
#: The rule, as the report states it.
RULE = (
    f"Rule: the winner is called likely real when its DSR at the effective number of trials "
    f"is at least {DSR_THRESHOLD} and the PBO is below {PBO_THRESHOLD}."
)


@dataclass(frozen=True)
class VerdictInputs:
    """What the verdict is decided from.

    Attributes
    ----------
    naive_n : int
        Configs that finished (each one a trial).
    effective_n : float or None
        Effective number of independent trials (None when the returns could not be
        recomputed).
    mean_correlation : float or None
        Mean pairwise correlation of the configs' returns.
    winner : str
        The winner's parameters, as text.
    winner_sharpe_ann : float
        Its annualised Sharpe ratio.
    expected_max_ann : float or None
        Expected best annualised Sharpe of ``effective_n`` (else ``naive_n``) skill-less
        trials.
    dsr_naive : float or None
        Deflated Sharpe ratio at ``naive_n``.
    dsr_effective : float or None
        Deflated Sharpe ratio at ``effective_n``.
    pbo : float or None
        Probability of backtest overfitting (None when not computable).
    complete : bool
        Whether every config of the grid is done.
    """

    naive_n: int
    effective_n: float | None
    mean_correlation: float | None
    winner: str
    winner_sharpe_ann: float
    expected_max_ann: float | None
    dsr_naive: float | None
    dsr_effective: float | None
    pbo: float | None
    complete: bool = True


@dataclass(frozen=True)
class Verdict:
    """The verdict.

    Attributes
    ----------
    likely_real : bool or None
        True: the winner passes the rule; False: it does not; None: no DSR to judge by.
    headline : str
        One line.
    reasons : tuple of str
        Each criterion, met or not.
    paragraph : str
        The plain-language paragraph the report ends its statistics with.
    """

    likely_real: bool | None
    headline: str
    reasons: tuple[str, ...]
    paragraph: str


def _describe_correlation(rho: float | None) -> str:
    if rho is None:
        return "their correlation could not be measured (the returns were not recomputed)"
    strength = "strongly" if abs(rho) >= 0.5 else "moderately" if abs(rho) >= 0.2 else "weakly"
    return f"their returns are {strength} correlated (mean pairwise correlation {rho:.2f})"


def judge_winner(inputs: VerdictInputs) -> Verdict:
    """Decide whether the sweep's best config is likely a real edge.

    Parameters
    ----------
    inputs : VerdictInputs
        Trial counts, correlation, the winner's Sharpe, DSRs and PBO.

    Returns
    -------
    Verdict
        ``likely_real`` is True when the DSR at the effective number of trials (the naive
        count if that is unknown) is at least :data:`DSR_THRESHOLD` and the PBO is below
        :data:`PBO_THRESHOLD` (a missing PBO fails the rule: nothing says the selection
        holds out of sample); None when no DSR is available.

    Notes
    -----
    The DSR asks whether the winner's Sharpe beats the best that this many skill-less
    trials would show by luck; the PBO asks whether picking the in-sample best tends to
    pick an out-of-sample loser. A real edge should pass both. Passing at the naive count
    as well (more trials assumed) makes the call stronger, and is said so.
    """
    dsr = inputs.dsr_effective if inputs.dsr_effective is not None else inputs.dsr_naive
    count_used = "effective" if inputs.dsr_effective is not None else "naive"
    n_used = inputs.effective_n if inputs.dsr_effective is not None else float(inputs.naive_n)
    reasons = []
    if dsr is None:
        likely: bool | None = None
        headline = "No verdict: the deflated Sharpe ratio could not be computed."
    else:
        dsr_ok = dsr >= DSR_THRESHOLD
        pbo_ok = inputs.pbo is not None and inputs.pbo < PBO_THRESHOLD
        reasons.append(
            f"DSR at the {count_used} number of trials is {dsr:.3f} "
            f"({'>=' if dsr_ok else '<'} {DSR_THRESHOLD})"
        )
        reasons.append(
            "PBO could not be computed"
            if inputs.pbo is None
            else f"PBO is {inputs.pbo:.3f} ({'<' if pbo_ok else '>='} {PBO_THRESHOLD})"
        )
        likely = dsr_ok and pbo_ok
        if likely:
            strong = inputs.dsr_naive is not None and inputs.dsr_naive >= DSR_THRESHOLD
            headline = "The winner is likely real" + (
                " (it passes even at the naive count of trials)." if strong else "."
            )
        else:
            headline = "The winner is not distinguishable from selection luck."
    counts = f"The sweep tried {inputs.naive_n:,} configurations"
    if inputs.effective_n is not None:
        counts += (
            f"; {_describe_correlation(inputs.mean_correlation)}, so they amount to about "
            f"{inputs.effective_n:,.1f} independent trials."
        )
    else:
        counts += f"; {_describe_correlation(None)}, so only the naive count is used."
    parts = [
        counts,
        f"The best configuration ({inputs.winner}) has an annualised Sharpe ratio of "
        f"{inputs.winner_sharpe_ann:.2f}.",
    ]
    if inputs.expected_max_ann is not None and n_used is not None:
        parts.append(
            f"The best of {n_used:,.1f} skill-less trials with the same spread of Sharpe "
            f"ratios would be expected to show {inputs.expected_max_ann:.2f} by luck alone."
        )
    if inputs.dsr_naive is not None or inputs.dsr_effective is not None:
        dsr_text = []
        if inputs.dsr_effective is not None:
            dsr_text.append(f"{inputs.dsr_effective:.3f} at the effective number of trials")
        if inputs.dsr_naive is not None:
            dsr_text.append(f"{inputs.dsr_naive:.3f} at the naive count")
        parts.append("Its deflated Sharpe ratio is " + " and ".join(dsr_text) + ".")
    if inputs.pbo is not None:
        parts.append(
            f"The probability of backtest overfitting is {inputs.pbo:.2f}: in that share of "
            "the cross-validation splits the in-sample best ranked in the bottom half out of "
            "sample."
        )
    parts.append(headline if likely is None else f"Verdict: {headline[0].lower()}{headline[1:]}")
    if not inputs.complete:
        parts.append("The sweep is incomplete; the verdict covers the configs done so far.")
    return Verdict(likely, headline, tuple(reasons), " ".join(parts))
