//! linerate-report: result documents in, text out. Every renderer is a function of a
//! [`linerate_wire::result::TestResult`] (or a [`linerate_wire::sweep::Sweep`], a
//! [`linerate_wire::result::Repeated`]) alone, so a stored document renders again without the
//! network.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod campaign;
pub mod compare;
pub mod figures;
pub mod headline;
pub mod html;
pub mod json;
pub mod lab;
pub mod live;
pub mod matrix;
pub mod plot;
pub mod repeat;
pub mod results;
pub mod sweep;
pub mod sys;
pub mod text;
