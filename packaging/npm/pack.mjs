// Packs the two npm packages of a release (scripts/release), in the napi-rs convention:
//
//   acp-facade                 the JavaScript entry points, the declarations and the Node demo: the
//                              root package.json's "files", and that package.json without its
//                              development parts, plus `optionalDependencies` on the addon package
//   acp-facade-linux-x64-gnu   the prebuilt addon (packaging/npm/linux-x64-gnu/, plus the file)
//
// The root package.json stays the developer's package (`npm install` builds from source): the
// optional dependency exists only in the packed one, so an install in a checkout never fetches an
// addon package from the registry.
//
// usage: node packaging/npm/pack.mjs ADDON.node WORK_DIR OUT_DIR
//   ADDON.node  the built addon (stripped);  WORK_DIR  where the packages are staged (emptied);
//   OUT_DIR     where the two .tgz files go.
import { execFileSync } from 'node:child_process'
import { copyFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const PLATFORM = 'linux-x64-gnu'
const root = fileURLToPath(new URL('../../', import.meta.url))
const [addon, work, out] = process.argv.slice(2).map((p) => p && resolve(p))
if (!addon || !work || !out) {
  process.stderr.write('usage: node packaging/npm/pack.mjs ADDON.node WORK_DIR OUT_DIR\n')
  process.exit(2)
}

const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'))
const writeJson = (path, value) => writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`)
const LICENSES = ['LICENSE-MIT', 'LICENSE-APACHE']

/** `npm pack` of a staged directory into OUT_DIR; the tarball's file name. */
function pack(dir) {
  const report = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], {
    cwd: dir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  return JSON.parse(report)[0].filename
}

const source = readJson(join(root, 'package.json'))
const version = source.version
const platformName = `acp-facade-${PLATFORM}`

rmSync(work, { recursive: true, force: true })
mkdirSync(out, { recursive: true })

// The addon package.
const platformDir = join(work, platformName)
mkdirSync(platformDir, { recursive: true })
const platformManifest = readJson(join(root, 'packaging/npm', PLATFORM, 'package.json'))
if (platformManifest.name !== platformName || platformManifest.version !== version) {
  throw new Error(`packaging/npm/${PLATFORM}/package.json must be ${platformName}@${version}`)
}
writeJson(join(platformDir, 'package.json'), platformManifest)
copyFileSync(join(root, 'packaging/npm', PLATFORM, 'README.md'), join(platformDir, 'README.md'))
for (const file of LICENSES) copyFileSync(join(root, file), join(platformDir, file))
copyFileSync(addon, join(platformDir, platformManifest.main))

// The main package.
const mainDir = join(work, source.name)
mkdirSync(mainDir, { recursive: true })
for (const entry of [...source.files, 'README.md']) {
  cpSync(join(root, entry), join(mainDir, entry), { recursive: true })
}
const { scripts, devDependencies, napi, ...published } = source
writeJson(join(mainDir, 'package.json'), { ...published, optionalDependencies: { [platformName]: version } })

for (const dir of [platformDir, mainDir]) process.stdout.write(`${join(out, pack(dir))}\n`)
