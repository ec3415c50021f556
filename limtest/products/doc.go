// Package products holds the models of limiter/model against the real
// products they describe (Debian's nginx limit_req and haproxy stick
// tables, go-chi/httprate), each started by limtest on a loopback port.
// It has no code of its own: its tests live apart from limiter/model's
// so the pure models' tests stay fast (these take seconds of real time,
// and building httprate takes minutes on a cold cache).
package products
