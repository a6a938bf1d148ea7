package transport

import (
	"context"
	"fmt"
	"slices"

	"github.com/twnsbench/twnsbench/nsbench/role"
	"github.com/twnsbench/twnsbench/nsbench/topology"
)

// Recipe is what a run's rows are built from, as data: the options' values
// and the builds (BuildWith). A role's host rebuilds a row from it to check
// the row there (CheckIn).
type Recipe struct {
	Values map[string]string
	Builds []BuildDef
}

type checkArgs struct {
	Row    string
	Recipe Recipe
}

// checkOp rebuilds a row on the role's host and runs its Check there: the
// programs, modules and paths it needs are that host's. checkHostOp does
// the same on a machine before any role is built there.
var (
	checkOp     = role.NewOp("transport.check", checkRow)
	checkHostOp = role.NewHostOp("transport.check-host", checkRow)
)

func checkRow(_ context.Context, a checkArgs) (string, error) {
	ts, err := BuildWith([]string{a.Row}, a.Recipe.Values, a.Recipe.Builds)
	if err != nil {
		return "", err
	}
	if len(ts) != 1 {
		return "", fmt.Errorf("row %q builds %d transports, not one", a.Row, len(ts))
	}
	if err := ts[0].Check(); err != nil {
		return err.Error(), nil
	}
	return "", nil
}

// CheckIn checks whether row (a Transport's Name) can run on r's host,
// built from rc: "" when it can, else why not (Check's error there). An
// error is the check's own failure, not the row's.
func CheckIn(ctx context.Context, r *role.Role, row string, rc Recipe) (string, error) {
	return checkOp.On(ctx, r, checkArgs{Row: row, Recipe: rc})
}

// CheckOnMachine checks whether row can run on machine m, built from rc,
// before anything of the run stands there: "" when it can, else why not.
func CheckOnMachine(ctx context.Context, m role.Machine, row string, rc Recipe) (string, error) {
	return checkHostOp.On(ctx, m, checkArgs{Row: row, Recipe: rc})
}

// RolesOf are the roles t runs in: the client, the server and those it
// needs besides (RoleNeeder), sorted.
func RolesOf(t Transport) []string {
	roles := []string{topology.Client, topology.Server}
	if n, ok := t.(RoleNeeder); ok {
		roles = append(roles, n.NeedsRoles()...)
	}
	slices.Sort(roles)
	return slices.Compact(roles)
}
