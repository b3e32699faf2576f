"""Human games: human players' figures as a reference, the imported games (Avalon-NLU, avalongame.online), the
judges against the players' labels (`avalon calibrate`) and the belief-probe scores and report on them
(`avalon probe-humans`; the probing itself is the host's, `host.human_probes`)."""
