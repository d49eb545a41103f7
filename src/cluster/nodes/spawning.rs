//! Starting the fleet: every node execed or forked from the zygote, each start logged.

use super::*;

impl Fleet {
    /// Starts every node on its socket (bound by the launcher, in plan order); each socket is
    /// closed here once its node has it. A message to a node not yet running waits in its
    /// socket.
    ///
    /// Every node starts its algorithm and its clock together, once all are spawned and have
    /// warmed up (`gate`, whose pipes `zygote` holds too when it forks them): no timeout (an
    /// unanswered message, a missing heartbeat) runs while later nodes are still being spawned,
    /// which on two cores takes seconds for thousands of nodes, and no node's first messages
    /// wait behind another's start-up work.
    pub(crate) fn spawn_all(
        &mut self,
        sockets: Vec<UdpSocket>,
        zygote: Option<Zygotes>,
        gate: Gate,
    ) -> Result<(), String> {
        match zygote {
            Some(z) => self.fork_all(sockets, z)?,
            None => self.exec_all(sockets, gate.inherited())?,
        }
        crate::cluster::phases::mark("forked");
        let (waited_ms, impatient) = gate.open();
        if impatient {
            eprintln!("coordlab: some node was not ready {waited_ms:.0} ms after the last spawn: starting all anyway");
        }
        crate::cluster::phases::mark("gate");
        Ok(())
    }

    /// Starts every node by exec (when the launcher cannot fork), each inheriting `gate`.
    pub(super) fn exec_all(&mut self, sockets: Vec<UdpSocket>, gate: Inherited) -> Result<(), String> {
        for (i, socket) in sockets.into_iter().enumerate() {
            let plan = self.nodes[i].plan.clone();
            let pid = self.spawn_one(&plan, plan.initiator, socket, Some(gate))?;
            self.log_spawn(&plan, pid);
        }
        Ok(())
    }

    /// Writes that `plan`'s node of the first launch runs as `pid`.
    pub(super) fn log_spawn(&mut self, plan: &NodePlan, pid: Pid) {
        self.fault(
            Some(plan.id),
            Event::Spawn {
                pid: pid.as_raw() as u32,
                addr: plan.addr.to_string(),
            },
        );
    }

    /// Spawns `plan`'s node on `socket`, which is dropped (closed in the launcher) on return.
    pub(super) fn spawn_one(
        &mut self,
        plan: &NodePlan,
        initiator: bool,
        socket: UdpSocket,
        gate: Option<Inherited>,
    ) -> Result<Pid, String> {
        let spawned = match self.args.spawn(plan, initiator, &socket, gate, self.group) {
            // Every earlier member of the group is gone: the group went with them.
            Err(e) if self.group.is_some() && e.raw_os_error() == Some(Errno::EPERM as i32) => {
                self.args.spawn(plan, initiator, &socket, gate, None)
            }
            other => other,
        };
        drop(socket);
        let pid = spawned.map_err(|e| format!("cannot start node {}: {e}", plan.id))?;
        self.started_process(plan.id, pid);
        Ok(pid)
    }

    /// Has `zygote` fork every node of the first launch, each on its socket (closed in the
    /// launcher once sent); they start at the gate, as with [`Self::spawn_all`].
    pub(super) fn fork_all(&mut self, sockets: Vec<UdpSocket>, zygote: Zygotes) -> Result<(), String> {
        self.group = Some(zygote.group());
        let n = sockets.len();
        let mut sockets = sockets.into_iter().enumerate();
        let mut asked = 0;
        let mut failed: Option<String> = None;
        for i in 0..n {
            // Up to AHEAD requests wait ahead of the replies (see `fork::AHEAD`); each socket
            // is closed here once its request (which carries a copy) is sent. After a failure
            // no more are sent, but the replies already owed are read, so that every node
            // forked is known and stopped with the others.
            while failed.is_none() && asked < n.min(i + zygote.ahead()) {
                let (j, socket) = sockets.next().expect("one socket per node");
                let sent = zygote.request(j, socket.as_raw_fd());
                drop(socket);
                match sent {
                    Ok(()) => asked += 1,
                    Err(e) => failed = Some(format!("cannot start node {}: {e}", self.nodes[j].plan.id)),
                }
            }
            if i >= asked {
                break;
            }
            let id = self.nodes[i].plan.id;
            let pid = match zygote.forked(i) {
                Ok(pid) => pid,
                Err(e) => {
                    failed.get_or_insert(format!("cannot start node {id}: {e}"));
                    continue;
                }
            };
            // By index: finding each node by id made the launch quadratic in n.
            self.started_at(i, pid);
            self.fault(
                Some(id),
                Event::Spawn {
                    pid: pid.as_raw() as u32,
                    addr: self.nodes[i].plan.addr.to_string(),
                },
            );
        }
        zygote.finish();
        failed.map_or(Ok(()), Err)
    }

    /// Records that node `id` now runs as process `pid` (the first process of a new group leads
    /// the run's group).
    pub(super) fn started_process(&mut self, id: u64, pid: Pid) {
        let i = self.find(id).expect("ids come from the plan");
        self.started_at(i, pid);
    }

    /// [`Self::started_process`] for the node at index `i`.
    pub(super) fn started_at(&mut self, i: usize, pid: Pid) {
        if nix::unistd::getpgid(Some(pid)) == Ok(pid) {
            self.group = Some(pid);
        }
        self.by_pid.insert(pid, i);
        let node = &mut self.nodes[i];
        node.pid = Some(pid);
        node.state = State::Running;
        node.started = false;
    }
}
