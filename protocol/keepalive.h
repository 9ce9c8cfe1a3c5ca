// TCP keepalive on the farm's sockets (the coordinator's ROUTER, the workers' and
// clients' DEALERs): a connection whose peer vanished without closing it (a host
// powered off, a pulled cable, a firewall or NAT that dropped it) is probed after 30 s
// of silence and closed by the kernel after three unanswered probes 10 s apart, so it
// holds no queue or descriptor for long. The farm's own heartbeats decide liveness
// much sooner (kLiveness in protocol/wire.h); keepalive frees what they cannot.
#pragma once

#include <zmq.hpp>

namespace schedfarm {

inline constexpr int kKeepaliveIdleSeconds = 30;
inline constexpr int kKeepaliveIntervalSeconds = 10;
inline constexpr int kKeepaliveProbes = 3;

// Sets the keepalive options; before connect or bind.
void SetTcpKeepalive(zmq::socket_t& socket);

}  // namespace schedfarm
