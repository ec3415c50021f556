package report

// kinds are the document kinds this build reads and draws, one line each.
// Adding a kind: write its files (see docs/ARCHITECTURE.md) and add its
// line here.
var kinds = newRegistry(
	evalKind.entry(),
	simulateKind.entry(),
	scriptsKind.entry(),
	raceKind.entry(),
	loadKind.entry(),
	keyslotKind.entry(),
	probeKind.entry(),
	failoverKind.entry(),
	fingerprintKind.entry(),
	suiteKind.entry(),
)
