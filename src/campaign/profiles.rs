//! The agents' profiles a plan asks for, checked before its first point: a lab started
//! without them passed `plan check`, and the run then had every profiled point refused. Each
//! agent a profiled point names is asked once which profiles it has (`profiles` in
//! docs/protocol.md: nothing runs on it); a profile one lacks fails the check with the agent, the
//! profiles and the points that need them named, and in a lab how to start its agents with them.
//! An agent that cannot be reached is reported, not failed: the plan may start it in its setup.

use super::ReadyPoint;
use crate::cli::ConnectArgs;
use linerate_core::client::{Target, agent_profiles};
use std::collections::BTreeMap;

/// What a point asks of its agents: a profile, and how to reach them.
#[derive(Clone, Debug)]
pub struct ProfileAsk {
    pub profile: String,
    /// The agents as the point names them (`h2`, `10.0.0.2:5301`).
    pub agents: Vec<String>,
    pub port: u16,
    pub reach: ConnectArgs,
}

/// One agent's answer, against what the plan asks of it.
pub struct AgentProfiles {
    pub agent: String,
    /// Its profiles, or why it could not say.
    pub has: Result<Vec<String>, String>,
    /// Each profile the plan asks of it, with the number of points that ask.
    pub asked: BTreeMap<String, usize>,
}

impl AgentProfiles {
    /// The profiles asked of it that it does not have (none when it could not be asked).
    pub fn missing(&self) -> Vec<&str> {
        match &self.has {
            Ok(has) => self
                .asked
                .keys()
                .filter(|p| !has.contains(p))
                .map(String::as_str)
                .collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// Asks every agent a profiled point names which profiles it has, once per agent.
pub fn check<'a>(ready: impl IntoIterator<Item = &'a ReadyPoint>) -> Vec<AgentProfiles> {
    let mut agents: BTreeMap<String, (ProfileAsk, BTreeMap<String, usize>)> = BTreeMap::new();
    for ask in ready.into_iter().filter_map(|r| r.profile.as_ref()) {
        for agent in &ask.agents {
            let key = format!("{agent} port {}", ask.port);
            let entry = agents.entry(key).or_insert_with(|| {
                let mut one = ask.clone();
                one.agents = vec![agent.clone()];
                (one, BTreeMap::new())
            });
            *entry.1.entry(ask.profile.clone()).or_default() += 1;
        }
    }
    agents
        .into_values()
        .map(|(ask, asked)| {
            let agent = ask.agents[0].clone();
            let has = (|| -> anyhow::Result<Vec<String>> {
                let target = Target::resolve(&agent, ask.port)?;
                Ok(agent_profiles(&target, &ask.reach.options()?)?)
            })()
            .map_err(|e| format!("{e:#}"));
            AgentProfiles { agent, has, asked }
        })
        .collect()
}

/// The check's lines, one per agent asked that has every profile asked of it (or could not be
/// asked), and, when any lacks one, the lines that say which and what to do.
pub fn report(answers: &[AgentProfiles], lab: Option<&str>) -> (String, Option<String>) {
    let mut text = String::new();
    let mut missing_text = String::new();
    for a in answers {
        let asked: Vec<String> = a.asked.iter().map(|(p, n)| format!("{p} ({})", points(*n))).collect();
        match &a.has {
            Err(why) => {
                text += &format!(
                    "  profiles: agent {} not asked ({why}); the plan asks for {}\n",
                    a.agent,
                    asked.join(", ")
                );
            }
            Ok(has) => {
                let missing = a.missing();
                let has_text = if has.is_empty() {
                    "none".to_string()
                } else {
                    has.join(", ")
                };
                if missing.is_empty() {
                    text += &format!("  profiles: agent {} has {has_text}: every one asked\n", a.agent);
                } else {
                    let needed: Vec<String> = missing
                        .iter()
                        .map(|p| format!("'{p}' ({})", points(a.asked[*p])))
                        .collect();
                    missing_text += &format!(
                        "agent {} has no profile {} (it has: {has_text})\n",
                        a.agent,
                        needed.join(", ")
                    );
                }
            }
        }
    }
    if missing_text.is_empty() {
        return (text, None);
    }
    let hint = match lab {
        Some(name) => {
            let flag = if name == linerate_lab::DEFAULT_NAME {
                String::new()
            } else {
                format!(" --name {name}")
            };
            format!(
                "a lab's agents have the profiles it was started with: `linerate lab down{flag}`, then \
                 `linerate lab up{flag} --hosts N --profile NAME=COMMAND` for each (docs/lab.md)\n"
            )
        }
        None => {
            "an agent has the profiles its owner starts it with: `linerate serve --profile NAME=COMMAND`\n".to_string()
        }
    };
    (text, Some(missing_text + &hint))
}

fn points(n: usize) -> String {
    if n == 1 {
        "1 point".to_string()
    } else {
        format!("{n} points")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(agent: &str, has: Result<Vec<&str>, &str>, asked: &[(&str, usize)]) -> AgentProfiles {
        AgentProfiles {
            agent: agent.into(),
            has: has
                .map(|h| h.iter().map(|s| s.to_string()).collect())
                .map_err(str::to_string),
            asked: asked.iter().map(|(p, n)| (p.to_string(), *n)).collect(),
        }
    }

    #[test]
    fn issue_23_a_missing_profile_is_named_with_its_points_and_the_lab_hint() {
        let answers = [
            answer("h2", Ok(vec![]), &[("offload-on", 4), ("offload-off", 4)]),
            answer("h3", Ok(vec!["offload-on", "offload-off"]), &[("offload-on", 4)]),
        ];
        let (ok, err) = report(&answers, Some("toe"));
        let err = err.expect("h2 has none");
        assert!(
            err.contains("agent h2 has no profile 'offload-off' (4 points), 'offload-on' (4 points) (it has: none)"),
            "{err}"
        );
        assert!(
            ok.contains("agent h3 has offload-on, offload-off: every one asked"),
            "{ok}"
        );
        assert!(
            err.contains("linerate lab up --name toe --hosts N --profile NAME=COMMAND"),
            "{err}"
        );
        let err = report(&answers[..1], None).1.expect("h2 has none");
        assert!(err.contains("linerate serve --profile"), "{err}");
        // Every profile there, or the agent not reached: the check passes, and says so.
        let (ok, err) = report(&[answer("h9", Err("connection refused"), &[("x", 1)])], None);
        assert!(
            ok.contains("agent h9 not asked (connection refused)") && err.is_none(),
            "{ok}"
        );
        assert!(report(&answers[1..], None).1.is_none());
    }
}
