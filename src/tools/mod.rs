//! Tools that study an algorithm rather than run it: the quorum-risk formula ([`risk`]) and its
//! check against the real voting protocol in the simulator ([`risk_sim`]).

pub mod risk;
pub mod risk_sim;
