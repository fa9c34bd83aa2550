// The Sign stage.
