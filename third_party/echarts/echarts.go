// Package echarts embeds the vendored Apache ECharts browser bundle
// (echarts.min.js, Apache-2.0; see LICENSE, NOTICE and README.md here) so
// that snapview's HTML reports can inline it and work with no network.
package echarts

import _ "embed"

// Version is the echarts npm package version of JSSource.
const Version = "5.4.3"

// SHA256 is the hex sha256 of JSSource, as pinned in update.sh.
const SHA256 = "1156429a16a38cb8604dcc6518c19406d4226142d908f8edd2e3531443c54d19"

// JSSource is dist/echarts.min.js of echarts@5.4.3. It contains no
// "</script" and can be placed inside a <script> element as is.
//
//go:embed echarts.min.js
var JSSource string

// License is the bundle's LICENSE file (Apache-2.0 with the subcomponent
// list); Notice its NOTICE file. Reports that inline JSSource keep the
// bundle's own license header comment.
//
//go:embed LICENSE
var License string

//go:embed NOTICE
var Notice string
