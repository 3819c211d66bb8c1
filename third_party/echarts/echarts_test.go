package echarts

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestBundleHash(t *testing.T) {
	sum := sha256.Sum256([]byte(JSSource))
	if got := hex.EncodeToString(sum[:]); got != SHA256 {
		t.Errorf("sha256(echarts.min.js) = %s, want %s (run update.sh)", got, SHA256)
	}
}

func TestBundleInlinable(t *testing.T) {
	if i := strings.Index(strings.ToLower(JSSource), "</script"); i >= 0 {
		t.Errorf("echarts.min.js contains </script at byte %d; it cannot be inlined", i)
	}
	if !strings.Contains(JSSource, "Licensed to the Apache Software Foundation") {
		t.Error("echarts.min.js lost its license header")
	}
}

func TestLicenseFiles(t *testing.T) {
	if !strings.Contains(License, "Apache License") {
		t.Error("LICENSE is not the Apache License")
	}
	if !strings.Contains(Notice, "Apache ECharts") {
		t.Error("NOTICE does not name Apache ECharts")
	}
}
