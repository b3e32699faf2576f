"""The paper's measures of a run: outcome metrics, the summaries of the judged behaviors, belief-probe scores,
the paper's figures beside ours, and `avalon analyze`'s report."""
