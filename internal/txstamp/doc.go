// Package txstamp writes a TCP connection through sendmsg and, for the
// writes asked for, returns the kernel's software transmit timestamp of
// their last byte (SO_TIMESTAMPING with SOF_TIMESTAMPING_TX_SOFTWARE, read
// from the socket's error queue; Linux only). It is receive stamps'
// (internal/rxstamp) other half.
//
// Why: a request's start taken by the process's clock before the write
// includes whatever delays the writing goroutine (a busy core, the run
// queue) and the write system call itself; the kernel stamps the moment
// the bytes went to the network device. With the receive stamps of the
// response, TTFT then runs between two kernel times.
//
// What a stamp means: SOF_TIMESTAMPING_TX_SOFTWARE is taken when the
// segment holding the write's last byte is handed to the device driver
// (on loopback, within the write call; on a NIC, after the queueing
// discipline). TCP may send that segment later than the write when its
// window is full; the stamp is then that later time, when the bytes
// really left.
//
// How: the stamp is asked for per write with a control message, so only
// the writes that need one cost anything; the socket option turns on
// only reporting (SOF_TIMESTAMPING_SOFTWARE), an id per stamp
// (SOF_TIMESTAMPING_OPT_ID: the byte count of the write's last byte, so
// a stamp is matched to its write) and no payload in the error queue
// (SOF_TIMESTAMPING_OPT_TSONLY). The error queue is read at once after
// the stamped write and again when the stamp is wanted, so it does not
// stay filled: a socket whose error queue holds messages reports
// EPOLLERR, which wakes its reader for nothing, and Go's poller takes an
// EPOLLERR that comes alone (the socket neither readable nor writable, as
// while a large body fills the send buffer) as an error for a reader
// parked on the socket (runtime netpollcheckerr). So a caller asks for one
// stamp a request, on its first write, whose segment leaves within the
// write call unless TCP's window is full.
//
// Fallbacks, as for receive stamps: not Linux, not a *net.TCPConn, or a
// kernel that refuses the option: New returns nil and the caller uses its
// own clock. A write whose stamp has not come (the segment is still
// queued) gives none, and the caller does the same.
package txstamp
