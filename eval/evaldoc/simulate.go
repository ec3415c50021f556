package evaldoc

import (
	"encoding/json"
	"fmt"

	"github.com/ratelimit-dev/ratelimit/doc"
)

// SimResult is the document of `ratelimit eval --simulate` (kind "simulate").
type SimResult struct {
	doc.Header
	Algo       string    `json:"algo"`
	Params     ParamsDoc `json:"params"`
	Rate       string    `json:"arrival_rate"` // e.g. "20/s"
	RatePerS   float64   `json:"arrival_rate_per_s"`
	ForMs      int64     `json:"duration_ms"` // virtual time covered
	Arrivals   int       `json:"arrivals"`
	Admitted   int       `json:"allowed"`
	Refused    int       `json:"refused"`
	PerSecond  []int     `json:"allowed_per_second"` // allowed in each virtual second
	Model      int       `json:"model_allowed"`      // what the pure Go model allows
	Agrees     bool      `json:"model_agrees"`       // script and model made the same decisions
	WallMs     float64   `json:"wall_ms"`            // wall time spent on the server
	Pipelines  int       `json:"pipelines"`          // round trips used for the calls
	FirstRefMs int64     `json:"first_refused_ms"`   // virtual ms of the first refusal, -1 if none
	Checks     []Check   `json:"checks"`             // written from Agrees (see CheckList)
	Verdict    string    `json:"verdict"`            // written from Agrees
}

// CheckList returns the simulation's check, derived from Agrees.
func (r SimResult) CheckList() []Check {
	c := Check{ID: CheckModel, Pass: r.Agrees, Message: "same decisions as the script"}
	if !r.Agrees {
		c.Message = fmt.Sprintf("the Go model admits %d, the script %d: their decisions differ", r.Model, r.Admitted)
	}
	return []Check{c}
}

// Pass reports whether the script and the model agreed.
func (r SimResult) Pass() bool { return doc.Pass(r.CheckList()) }

// MarshalJSON writes the document with its checks and verdict computed
// from Agrees, so they cannot disagree with it.
func (r SimResult) MarshalJSON() ([]byte, error) {
	type plain SimResult
	p := plain(r)
	p.Checks = r.CheckList()
	p.Verdict = doc.Verdict(p.Checks)
	return json.Marshal(p)
}
