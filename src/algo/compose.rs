//! Composition: one component runs inside another with its own messages and timers.
//!
//! A component (a failure detector, ring repair, a protocol inside a wrapper) is written
//! against a plain [`Context`] of its *own* message and timer types, exactly like a simple
//! [`Algorithm`](super::Algorithm). Its host gives each hosted component a variant in its own
//! message enum and in its own timer enum, and says so once, in an [`Embed`] impl: that impl is
//! the only place the child's types are mapped into the parent's. [`Context::within`] then runs
//! the child with a scoped context and wraps whatever it sent or set on the way out; incoming
//! messages and expired timers are unwrapped by the host's `match`, and handed down the same way.
//!
//! A family wrapper (mutex, election) runs its protocol the same way, with
//! [`Context::run_inner`]: the protocol gets the plain context over its own types plus a
//! read-only view of the family's state, and the wrapper maps the returned commands -- the
//! family requests (`Command::Ask`) among them -- in one function, in the order issued.
//!
//! ```
//! use coordlab::algo::compose::Embed;
//! use coordlab::algo::{Context, NodeId};
//! use coordlab::rng::Rng;
//! use std::time::Duration;
//!
//! // A child component: pings a node and waits for it.
//! #[derive(Debug, Clone, PartialEq)]
//! enum PingMsg { Ping }
//! #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
//! struct PingTimer;
//! fn ping(cx: &mut Context<'_, PingMsg, PingTimer>, to: NodeId) {
//!     cx.send(to, PingMsg::Ping);
//!     cx.set_timer(PingTimer, Duration::from_millis(300));
//! }
//!
//! // The host's own enums hold the child's in one variant each...
//! #[derive(Debug, Clone, PartialEq)]
//! enum HostMsg { Work(u64), Ping(PingMsg) }
//! #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
//! enum HostTimer { Work, Ping(PingTimer) }
//!
//! // ...and this is the one place that says so.
//! struct PingSlot;
//! impl Embed<HostMsg, HostTimer> for PingSlot {
//!     type Msg = PingMsg;
//!     type Timer = PingTimer;
//!     fn msg(m: PingMsg) -> HostMsg { HostMsg::Ping(m) }
//!     fn timer(t: PingTimer) -> HostTimer { HostTimer::Ping(t) }
//! }
//!
//! let (mut rng, mut out) = (Rng::new(1), Vec::new());
//! let mut cx: Context<'_, HostMsg, HostTimer> = Context::new(Duration::ZERO, 1, &mut rng, &mut out);
//! cx.send(2, HostMsg::Work(7));
//! cx.within::<PingSlot, _>(|child| ping(child, 2));
//! assert_eq!(out.len(), 3); // Send(Work), Send(Ping(Ping)), SetTimer(Ping(PingTimer))
//! ```

use super::{Command, Context};

/// Where a child component's messages and timers sit in its host's enums (`M`, `T`).
pub trait Embed<M, T> {
    /// The child's messages.
    type Msg;
    /// The child's timers.
    type Timer;
    /// Wraps a child message into the host's message type.
    fn msg(m: Self::Msg) -> M;
    /// Wraps a child timer into the host's timer type.
    fn timer(t: Self::Timer) -> T;
}

/// Declares a component's slot: the unit struct and its [`Embed`] impl, from the host's two
/// enums and the variant of each that carries the component's messages and timers.
///
/// ```text
/// slot! {
///     /// The liveness detector's place in the wrapper's enums.
///     pub(super) struct LiveSlot;
///     impl<M, T> for LMsg<M>, LTimer<T>: LiveMsg => LMsg::Live, LiveTimer => LTimer::Live
/// }
/// ```
macro_rules! slot {
    ($(#[$doc:meta])* $vis:vis struct $slot:ident;
     impl $(<$($g:ident),*>)? for $hm:ty, $ht:ty: $msg:ty => $mv:expr, $timer:ty => $tv:expr) => {
        $(#[$doc])*
        $vis struct $slot;

        impl $(<$($g),*>)? $crate::algo::compose::Embed<$hm, $ht> for $slot {
            type Msg = $msg;
            type Timer = $timer;
            fn msg(m: $msg) -> $hm {
                ($mv)(m)
            }
            fn timer(t: $timer) -> $ht {
                ($tv)(t)
            }
        }
    };
}
pub(crate) use slot;

impl<M, T, R, V> Context<'_, M, T, R, V> {
    /// Runs `f` with a context of the child slot `E`: same time, node and random numbers; what
    /// it sends, sets, cancels or records comes out here, wrapped by `E`.
    pub fn within<E: Embed<M, T>, X>(&mut self, f: impl FnOnce(&mut Context<'_, E::Msg, E::Timer>) -> X) -> X {
        let (x, out) = self.run_inner(&(), f);
        for c in out {
            self.push(match c {
                Command::Send(to, m) => Command::Send(to, E::msg(m)),
                Command::SetTimer(t, d) => Command::SetTimer(E::timer(t), d),
                Command::CancelTimer(t) => Command::CancelTimer(E::timer(t)),
                Command::Record(ev) => Command::Record(ev),
                Command::Persist(b) => Command::Persist(b),
                Command::AdjustClock(c) => Command::AdjustClock(c),
            });
        }
        x
    }

    /// Runs `f` with a plain context of a hosted protocol's own types (same time, node, clock
    /// reading and random numbers) that reads the family's state through `view`, and hands back
    /// what it asked for, in order, for the host to map in one place (stateright's
    /// `ActorWrapper`: the inner actor gets its own `Out`, the wrapper processes it).
    pub(crate) fn run_inner<M2, T2, R2, V2, X>(
        &mut self,
        view: &V2,
        f: impl FnOnce(&mut Context<'_, M2, T2, R2, V2>) -> X,
    ) -> (X, Vec<Command<M2, T2, R2>>) {
        let mut out = Vec::new();
        let mut child = Context {
            now: self.now,
            me: self.me,
            rng: &mut *self.rng,
            pt: self.pt,
            msg_seq: self.msg_seq,
            view,
            out: &mut out,
        };
        let x = f(&mut child);
        (x, out)
    }
}
