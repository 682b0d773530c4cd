//! `linerate doctor`: the host's configuration checked against known tuning advice.
