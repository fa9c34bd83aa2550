// The Pipeline stage.
