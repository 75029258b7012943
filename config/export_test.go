package config

var DocumentPath = documentPath
