"""The LLM judges, each declared once as a `JudgeSpec` (`spec`) in one registry (`registry.JUDGES`): the paper's
judges of speeches (`speeches`), the judges of Avalon-NLU's human labels (`messages`); running them through
the disk cache (`run`, `cache`) and what the records say around a speech (`context`). Nothing is imported here,
so the summaries of the judged tables can read `labels` without loading the judges."""
