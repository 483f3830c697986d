package deploy

import (
	"os/exec"
	"testing"

	"github.com/servingprobe/servingprobe/testkit/external"
)

// TestAlertmanagerExample checks the shipped Alertmanager example with
// Alertmanager's own amtool, so that a user who copies it gets a
// configuration Alertmanager loads.
func TestAlertmanagerExample(t *testing.T) {
	amtool := external.Program(t, "amtool")
	out, err := exec.Command(amtool, "check-config", "alertmanager/alertmanager.yml").CombinedOutput()
	if err != nil {
		t.Fatalf("amtool check-config alertmanager/alertmanager.yml: %v\n%s", err, out)
	}
}
