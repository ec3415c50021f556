package eval

import (
	"encoding/json"
	"fmt"

	"github.com/ratelimit-dev/ratelimit/doc"
)

// CheckModel is the id of the one check of a simulation: the Go model
// made the same decisions as the script.
const CheckModel = "model-agrees"

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
