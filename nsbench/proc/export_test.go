package proc

var ParseCgroup2MountForTest = parseCgroup2Mount
