// The Install stage.
