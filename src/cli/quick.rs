//! `linerate quick`: the first thing to run on a new machine.

#[derive(Debug, clap::Args)]
pub struct QuickArgs {
    /// Seconds to send
    #[arg(short = 't', long = "time", value_name = "SECONDS", default_value = "3")]
    pub time: linerate_core::units::TimeSpan,

    /// Streams
    #[arg(short = 'P', long = "parallel", value_name = "N", default_value_t = 1)]
    pub streams: u16,

    #[command(flatten)]
    pub output: super::common::OutputArgs,
}
