package transport

import (
	"context"
	"fmt"

	"github.com/twnsbench/twnsbench/nsbench/role"
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
// programs, modules and paths it needs are that host's.
var checkOp = role.NewOp("transport.check", func(_ context.Context, a checkArgs) (string, error) {
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
})

// CheckIn checks whether row (a Transport's Name) can run on r's host,
// built from rc: "" when it can, else why not (Check's error there). An
// error is the check's own failure, not the row's.
func CheckIn(ctx context.Context, r *role.Role, row string, rc Recipe) (string, error) {
	return checkOp.On(ctx, r, checkArgs{Row: row, Recipe: rc})
}
